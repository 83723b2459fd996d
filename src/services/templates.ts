import { toIso, toIsoOrNull } from '../shared/clock.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import type { ListPage, Listed } from '../store/infra/list-page.js';
import {
  countTemplates,
  findTemplate,
  findTemplateByAlias,
  listTemplates,
  findTemplateVersion,
  lastTemplateVersion,
  listTemplateVersions,
  removeTemplate,
  saveTemplate,
  saveTemplateVersion,
  updateTemplate,
  type PublishedTemplate,
  type Template,
  type TemplateVariable,
  type TemplateVersion,
} from '../store/templates.js';
import { compileMjml } from '../messages/compile-mjml.js';
import { inlineCss } from '../messages/inline-css.js';
import { generationPrompt, parseGeneratedTemplate } from '../messages/generated-template.js';
import { chatCompletion } from '../shared/chat-completion.js';
import { plainTextOf } from '../messages/plain-text.js';
import { renderSubject, renderTemplate, variableNames } from '../messages/render-template.js';
import { checkTemplate, type Finding } from '../messages/template-checks.js';
import { loadClientSupport } from '../messages/client-support.js';
import type { ServiceDeps } from './deps.js';
import { parseMailbox, parseMailboxes, singleLine } from '../messages/addresses.js';
import type { Variables } from '../messages/render-template.js';

export type { TemplateVariable } from '../store/templates.js';

type TemplateLanguage = 'html' | 'mjml';

interface TemplateInput {
  name: string;
  subject?: string | null | undefined;
  /** The HTML; or give `mjml`, and the HTML is what it compiles to. */
  html?: string | undefined;
  mjml?: string | undefined;
  /** With `html`: move its `<style>` CSS into style attributes first (MJML does it itself). */
  inline_css?: boolean | undefined;
  text?: string | null | undefined;
  /** Another name to send or read the template by. */
  alias?: string | null | undefined;
  /** The default sender of mail using the template. */
  from?: string | null | undefined;
  reply_to?: string | string[] | null | undefined;
  variables?:
    | Array<
        Omit<TemplateVariable, 'fallback_value' | 'sample_value'> & {
          fallback_value?: string | number | null | undefined;
          sample_value?: string | number | null | undefined;
        }
      >
    | null
    | undefined;
}

type TemplateStatus = 'draft' | 'published';

export interface TemplateView {
  id: string;
  object: 'template';
  name: string;
  subject: string | null;
  /** The source language: `mjml` templates keep their MJML in `mjml`, and `html` is what it compiles to. */
  language: TemplateLanguage;
  html: string;
  mjml: string | null;
  text: string | null;
  alias: string | null;
  from: string | null;
  reply_to: string[] | null;
  variables: Array<TemplateVariable & { created_at: string; updated_at: string }> | null;
  /** The number of the version sends use (`GET /v1/templates/{id}/versions`); null before the first publish. */
  published_version: number | null;
  /** `published` once published: mail is then sent with the published version. */
  status: TemplateStatus;
  published_at: string | null;
  /** Changed since it was published (the changes are not used until published again). */
  has_unpublished_versions: boolean;
  current_version_id: string;
  created_at: string;
  updated_at: string;
}

/** The version of a template that mail is sent with. */
interface TemplateContent {
  id: string;
  subject: string | null;
  html: string;
  text: string | null;
  from: string | null;
  reply_to: string[] | null;
  /** Fallback values of the declared variables. */
  defaults: Variables;
}

export interface TemplateService {
  create(workspaceId: string, input: TemplateInput): Promise<TemplateView>;
  list(workspaceId: string, page: ListPage): Promise<Listed<TemplateView>>;
  /** By id or alias. */
  get(workspaceId: string, idOrAlias: string): Promise<TemplateView>;
  /** What mail sent with the template uses: the published version, or the draft if never published. */
  content(workspaceId: string, idOrAlias: string): Promise<TemplateContent>;
  update(workspaceId: string, idOrAlias: string, changes: Partial<TemplateInput>): Promise<TemplateView>;
  remove(workspaceId: string, idOrAlias: string): Promise<TemplateView>;
  /** Makes the current content the version mail is sent with. */
  publish(workspaceId: string, idOrAlias: string): Promise<TemplateView>;
  /** A new draft with the same content. */
  duplicate(workspaceId: string, idOrAlias: string): Promise<TemplateView>;
  /** The published versions, newest first. */
  versions(workspaceId: string, idOrAlias: string): Promise<TemplateVersionView[]>;
  /** Makes a version's content the draft again (publish to send it). */
  restore(workspaceId: string, idOrAlias: string, version: number): Promise<TemplateView>;
  /** The subject, HTML and text with the variables filled (given, else sample, else fallback values). */
  preview(workspaceId: string, idOrAlias: string, input: PreviewInput): Promise<TemplatePreview>;
  /** What would break the template in mail clients. */
  check(workspaceId: string, idOrAlias: string, input: CheckOptions): Promise<TemplateCheck>;
  /** Asks the configured model (inboxes.agent) for an MJML template from a description; saves it as a draft, checked. */
  generate(
    workspaceId: string,
    description: string,
  ): Promise<{ object: 'template_generation'; template: TemplateView; check: TemplateCheck }>;
}

/** Longest description a generation takes: a brief, not a document. */
const MAX_GENERATE_DESCRIPTION = 4000;

interface TemplateVersionView {
  object: 'template_version';
  template_id: string;
  version: number;
  /** Whether sends use it now. */
  published: boolean;
  subject: string | null;
  language: TemplateLanguage;
  html: string;
  mjml: string | null;
  text: string | null;
  variables: TemplateVariable[] | null;
  created_at: string;
}

interface PreviewInput {
  variables?: Variables | undefined;
  /** A published version (default: the current draft, what is being edited). */
  version?: number | undefined;
}

interface TemplatePreview {
  object: 'template_preview';
  template_id: string;
  version: number | null;
  subject: string | null;
  html: string;
  text: string;
  /** Variables the template uses; those with no value, sample or fallback (rendered empty); values given that it does not use. */
  variables: { used: string[]; missing: string[]; unknown: string[] };
}

interface CheckOptions {
  /** Marketing mail must carry an unsubscribe link (default transactional). */
  type?: 'transactional' | 'marketing' | undefined;
  version?: number | undefined;
}

interface TemplateCheck {
  object: 'template_check';
  template_id: string;
  version: number | null;
  /** Bytes of the compiled HTML (Gmail clips past 102 KB). */
  size: number;
  findings: Finding[];
  /** When the client-support data was last updated by caniemail.com. */
  client_data_updated: string;
}

/** Largest HTML or MJML source of a template (413 above): far more than Gmail shows (102 KB). */
export const MAX_TEMPLATE_BYTES = 512 * 1024;

const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const VARIABLE_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,49}$/;
const MAX_TEMPLATE_VARIABLES = 50;

function templateView(t: Template): TemplateView {
  const { variables } = t;
  const updated = toIso(t.updated_at);
  return {
    id: t.id,
    object: 'template',
    name: t.name,
    subject: t.subject === '' ? null : t.subject,
    language: t.language as TemplateLanguage,
    html: t.html,
    mjml: t.source,
    text: t.text,
    alias: t.alias,
    from: t.from_address,
    reply_to: t.reply_to,
    variables: variables?.map((v) => ({ ...v, created_at: updated, updated_at: updated })) ?? null,
    published_version: t.published_version,
    status: t.published_at === null ? 'draft' : 'published',
    published_at: toIsoOrNull(t.published_at),
    has_unpublished_versions: t.published_at !== null && t.updated_at > t.published_at,
    current_version_id: t.id,
    created_at: toIso(t.created_at),
    updated_at: updated,
  };
}

function checkVariables(variables: NonNullable<TemplateInput['variables']>): TemplateVariable[] {
  if (variables.length > MAX_TEMPLATE_VARIABLES)
    throw validationError('variables', `at most ${MAX_TEMPLATE_VARIABLES} variables`);
  const seen = new Set<string>();
  return variables.map((v, i) => {
    if (!VARIABLE_KEY.test(v.key))
      throw validationError(
        `variables[${i}].key`,
        'must be letters, digits and underscores (at most 50), not starting with a digit',
      );
    if (seen.has(v.key)) throw validationError(`variables[${i}].key`, `${v.key} is declared twice`);
    seen.add(v.key);
    const fallback = v.fallback_value ?? null;
    if (fallback !== null && typeof fallback !== v.type)
      throw validationError(`variables[${i}].fallback_value`, `must be a ${v.type}, as the variable's type`);
    const sample = v.sample_value ?? null;
    if (sample !== null && typeof sample !== v.type)
      throw validationError(`variables[${i}].sample_value`, `must be a ${v.type}, as the variable's type`);
    return { key: v.key, type: v.type, fallback_value: fallback, ...(sample !== null ? { sample_value: sample } : {}) };
  });
}

const sized = (field: string, value: string): string => {
  if (Buffer.byteLength(value, 'utf8') > MAX_TEMPLATE_BYTES)
    throw new AppError('payload_too_large', `${field}: must be at most ${MAX_TEMPLATE_BYTES} bytes`, { field });
  return value;
};

/** Row changes for the given fields, validated; MJML is compiled (its errors are 400s with their lines). */
async function fieldsOf(input: Partial<TemplateInput>): Promise<Partial<Template>> {
  const changes: Partial<Template> = {};
  if (input.html !== undefined && input.mjml !== undefined)
    throw validationError('mjml', 'give html or mjml, not both');
  if (input.mjml !== undefined) {
    if (input.mjml.trim() === '') throw validationError('mjml', 'must not be empty');
    changes.source = sized('mjml', input.mjml);
    changes.html = sized('html', await compileMjml(input.mjml));
    changes.language = 'mjml';
  }
  if (input.name !== undefined) {
    if (input.name.trim() === '' || input.name.length > 200)
      throw validationError('name', 'must be 1 to 200 characters');
    changes.name = input.name.trim();
  }
  if (input.subject !== undefined) {
    const subject = input.subject ?? '';
    singleLine('subject', subject);
    if (subject.length > 998) throw validationError('subject', 'must be at most 998 characters');
    changes.subject = subject;
  }
  if (input.inline_css && input.html === undefined) throw validationError('inline_css', 'applies to html');
  if (input.html !== undefined) {
    if (input.html.trim() === '') throw validationError('html', 'must not be empty');
    changes.html = sized('html', input.inline_css ? await inlineCss(sized('html', input.html)) : input.html);
    changes.language = 'html';
    changes.source = null;
  }
  if (input.text !== undefined) changes.text = input.text;
  if (input.alias !== undefined) {
    if (input.alias !== null && (!ALIAS.test(input.alias) || isUuid(input.alias)))
      throw validationError('alias', 'must be 1 to 100 letters, digits, dots, dashes or underscores (not a uuid)');
    changes.alias = input.alias;
  }
  if (input.from !== undefined) {
    if (input.from !== null) parseMailbox('from', input.from);
    changes.from_address = input.from;
  }
  if (input.reply_to !== undefined) {
    changes.reply_to =
      input.reply_to === null
        ? null
        : parseMailboxes('reply_to', input.reply_to).map((a) =>
            a.name ? `${JSON.stringify(a.name)} <${a.address}>` : a.address,
          );
  }
  if (input.variables !== undefined)
    changes.variables = input.variables === null ? null : checkVariables(input.variables);
  return changes;
}

const versionView = (v: TemplateVersion, published: number | null): TemplateVersionView => ({
  object: 'template_version',
  template_id: v.template_id,
  version: v.version,
  published: v.version === published,
  subject: v.subject === '' ? null : v.subject,
  language: v.language as TemplateLanguage,
  html: v.html,
  mjml: v.source,
  text: v.text,
  variables: v.variables,
  created_at: toIso(v.created_at),
});

const defaultsOf = (variables: TemplateVariable[] | null): Variables =>
  Object.fromEntries((variables ?? []).filter((v) => v.fallback_value !== null).map((v) => [v.key, v.fallback_value]));

export function createTemplateService(deps: ServiceDeps): TemplateService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, idOrAlias: string): Promise<Template> => {
    const found = isUuid(idOrAlias)
      ? await findTemplate(db, workspaceId, idOrAlias.toLowerCase())
      : await findTemplateByAlias(db, workspaceId, idOrAlias);
    if (!found) throw notFound(`Template ${idOrAlias}`);
    return found;
  };

  const insert = async (workspaceId: string, fields: Partial<Template>): Promise<TemplateView> => {
    const now = clock.now();
    const row: Template = {
      id: newId(),
      workspace_id: workspaceId,
      name: '',
      subject: '',
      html: '',
      text: null,
      alias: null,
      from_address: null,
      reply_to: null,
      variables: null,
      published: null,
      published_at: null,
      created_at: now,
      updated_at: now,
      language: 'html',
      source: null,
      published_version: null,
      ...fields,
    };
    await saveTemplate(db, row);
    return templateView(row);
  };

  const versionOf = async (workspaceId: string, t: Template, number: number): Promise<TemplateVersion> => {
    const v =
      Number.isInteger(number) && number > 0 ? await findTemplateVersion(db, workspaceId, t.id, number) : undefined;
    if (!v) throw notFound(`Version ${number} of template ${t.id}`);
    return v;
  };

  return {
    async create(workspaceId, input) {
      if (typeof input.name !== 'string') throw validationError('name', 'is required');
      if (typeof input.html !== 'string' && typeof input.mjml !== 'string')
        throw validationError('html', 'is required (or mjml)');
      return insert(workspaceId, await fieldsOf(input));
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([
        listTemplates(db, workspaceId, page),
        countTemplates(db, workspaceId),
      ]);
      return { items: rows.map(templateView), total, more };
    },

    get: async (workspaceId, idOrAlias) => templateView(await find(workspaceId, idOrAlias)),

    async content(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      const version: PublishedTemplate = t.published ?? {
        subject: t.subject,
        html: t.html,
        text: t.text,
        from: t.from_address,
        reply_to: t.reply_to,
        variables: t.variables,
      };
      return {
        id: t.id,
        subject: version.subject === '' ? null : version.subject,
        html: version.html,
        text: version.text,
        from: version.from,
        reply_to: version.reply_to,
        defaults: defaultsOf(version.variables),
      };
    },

    async update(workspaceId, idOrAlias, input) {
      const changes = await fieldsOf(input);
      const t = await find(workspaceId, idOrAlias);
      await updateTemplate(db, workspaceId, t.id, { ...changes, updated_at: clock.now() });
      return templateView(await find(workspaceId, t.id));
    },

    async remove(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      if (!(await removeTemplate(db, workspaceId, t.id))) throw notFound(`Template ${idOrAlias}`);
      return templateView(t);
    },

    async publish(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      const published: PublishedTemplate = {
        subject: t.subject,
        html: t.html,
        text: t.text,
        from: t.from_address,
        reply_to: t.reply_to,
        variables: t.variables,
      };
      const now = clock.now();
      const version = (await lastTemplateVersion(db, workspaceId, t.id)) + 1;
      // The version row first: it is never changed, so a send that used it can always be shown as it was.
      await saveTemplateVersion(db, {
        id: newId(),
        workspace_id: workspaceId,
        template_id: t.id,
        version,
        subject: t.subject,
        html: t.html,
        text: t.text,
        from_address: t.from_address,
        reply_to: t.reply_to,
        variables: t.variables,
        language: t.language,
        source: t.source,
        created_at: now,
      });
      // The update time stays: publishing does not make the content newer than what is published.
      await updateTemplate(db, workspaceId, t.id, {
        published,
        published_at: Math.max(now, t.updated_at),
        published_version: version,
      });
      return templateView(await find(workspaceId, t.id));
    },

    async versions(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      return (await listTemplateVersions(db, workspaceId, t.id)).map((v) => versionView(v, t.published_version));
    },

    async restore(workspaceId, idOrAlias, number) {
      const t = await find(workspaceId, idOrAlias);
      const v = await versionOf(workspaceId, t, number);
      await updateTemplate(db, workspaceId, t.id, {
        subject: v.subject,
        html: v.html,
        text: v.text,
        from_address: v.from_address,
        reply_to: v.reply_to,
        variables: v.variables,
        language: v.language,
        source: v.source,
        updated_at: Math.max(clock.now(), t.updated_at + 1),
      });
      return templateView(await find(workspaceId, t.id));
    },

    async preview(workspaceId, idOrAlias, input) {
      const t = await find(workspaceId, idOrAlias);
      const c = input.version === undefined ? t : await versionOf(workspaceId, t, input.version);
      const given = input.variables ?? {};
      const values: Variables = {};
      for (const v of c.variables ?? []) {
        const value = v.sample_value ?? v.fallback_value;
        if (value !== null && value !== undefined) values[v.key] = value;
      }
      Object.assign(values, given);
      const used = [...new Set([c.subject, c.html, c.text ?? ''].flatMap(variableNames))];
      const html = renderTemplate(c.html, values, 'html');
      return {
        object: 'template_preview',
        template_id: t.id,
        version: input.version ?? null,
        subject: c.subject === '' ? null : renderSubject(c.subject, values),
        html,
        text: c.text === null ? await plainTextOf(html) : renderTemplate(c.text, values, 'text'),
        variables: {
          used,
          missing: used.filter((n) => values[n] === undefined || values[n] === null),
          unknown: Object.keys(given).filter((n) => !used.includes(n)),
        },
      };
    },

    async generate(workspaceId, description) {
      if (description.trim() === '' || description.length > MAX_GENERATE_DESCRIPTION)
        throw validationError('description', `must be 1 to ${MAX_GENERATE_DESCRIPTION} characters`);
      const settings = deps.config.inboxes.agent;
      if (!settings.url)
        throw new AppError(
          'invalid_state',
          'No model is configured: set inboxes.agent.url (an OpenAI-compatible endpoint) to generate templates; an assistant over MCP needs none',
        );
      let content: unknown;
      try {
        content = await chatCompletion(
          settings,
          deps.resolver,
          [
            { role: 'system', content: generationPrompt() },
            { role: 'user', content: description },
          ],
          { json: true },
        );
      } catch (err) {
        throw new AppError('service_unavailable', `The model could not be asked: ${(err as Error).message}`, {
          retryAfter: 5,
        });
      }
      const answer = parseGeneratedTemplate(content);
      if ('error' in answer)
        throw new AppError(
          'service_unavailable',
          `The model's answer was not a template (${answer.error}); try again`,
          { retryAfter: 1 },
        );
      let template: TemplateView;
      try {
        template = await this.create(workspaceId, {
          name: answer.name,
          subject: answer.subject,
          mjml: answer.mjml,
          variables: answer.variables,
        });
      } catch (err) {
        // The model's MJML failed validation: its fault, not the caller's request.
        if (err instanceof AppError && err.code === 'validation_error')
          throw new AppError(
            'service_unavailable',
            `The model's template did not validate (${err.message}); try again`,
            { retryAfter: 1 },
          );
        throw err;
      }
      return { object: 'template_generation', template, check: await this.check(workspaceId, template.id, {}) };
    },

    async check(workspaceId, idOrAlias, input) {
      const t = await find(workspaceId, idOrAlias);
      const c = input.version === undefined ? t : await versionOf(workspaceId, t, input.version);
      const data = loadClientSupport(deps.config.templates.clientSupportData);
      const findings = await checkTemplate(
        {
          html: c.html,
          subject: c.subject,
          text: c.text,
          declared: (c.variables ?? []).map((v) => v.key),
          marketing: input.type === 'marketing',
        },
        data,
      );
      return {
        object: 'template_check',
        template_id: t.id,
        version: input.version ?? null,
        size: Buffer.byteLength(c.html, 'utf8'),
        findings,
        client_data_updated: data.last_update_date,
      };
    },

    async duplicate(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      const name = `${t.name} (copy)`.slice(0, 200);
      return insert(workspaceId, {
        name,
        subject: t.subject,
        html: t.html,
        text: t.text,
        from_address: t.from_address,
        reply_to: t.reply_to,
        variables: t.variables,
        language: t.language,
        source: t.source,
      });
    },
  };
}
