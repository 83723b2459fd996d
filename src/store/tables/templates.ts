/** Templates. */

export interface TemplatesTable {
  id: string;
  workspace_id: string;
  name: string;
  subject: string;
  html: string;
  text: string | null;
  /** Resend's template alias: another name to send or read the template by. */
  alias: string | null;
  /** Defaults for mail sent with the template. */
  from_address: string | null;
  /** JSON array of addresses. */
  reply_to: string | null;
  /** JSON array of `{key, type, fallback_value}`: values used when a send gives none. */
  variables: string | null;
  /** JSON `{subject, html, text, from, reply_to, variables}`: the version mail is sent with, once published. */
  published: string | null;
  published_at: number | null;
  created_at: number;
  updated_at: number;
  /** `html`, or `mjml`: then `source` is the MJML and `html` what it compiles to. */
  language: string;
  source: string | null;
  /** The number of the published version (template_versions); null: never published since versions were kept. */
  published_version: number | null;
}

/** One published version of a template: written once, never changed (what sends used stays as it was). */
export interface TemplateVersionsTable {
  id: string;
  workspace_id: string;
  template_id: string;
  /** 1, 2, … per template. */
  version: number;
  subject: string;
  html: string;
  text: string | null;
  from_address: string | null;
  /** JSON array of addresses. */
  reply_to: string | null;
  /** JSON array of `{key, type, fallback_value, sample_value}`. */
  variables: string | null;
  language: string;
  source: string | null;
  created_at: number;
}
