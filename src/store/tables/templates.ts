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
}
