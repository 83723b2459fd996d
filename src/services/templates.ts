import { toIso, toIsoOrNull } from '../shared/clock.js';
import { notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import type { ListPage, Listed } from '../store/list-page.js';
import {
  countTemplates,
  findTemplate,
  findTemplateByAlias,
  listTemplates,
  removeTemplate,
  saveTemplate,
  updateTemplate,
  type PublishedTemplate,
  type Template,
  type TemplateVariable,
} from '../store/templates.js';
import type { ServiceDeps } from './deps.js';
import { parseMailbox, parseMailboxes, singleLine } from '../messages/addresses.js';
import type { Variables } from '../messages/render-template.js';

export type { TemplateVariable } from '../store/templates.js';

export interface TemplateInput {
  name: string;
  subject?: string | null | undefined;
  html: string;
  text?: string | null | undefined;
  /** Another name to send or read the template by. */
  alias?: string | null | undefined;
  /** The default sender of mail using the template. */
  from?: string | null | undefined;
  reply_to?: string | string[] | null | undefined;
  variables?: Array<Omit<TemplateVariable, 'fallback_value'> & { fallback_value?: string | number | null | undefined }> | null | undefined;
}

export type TemplateStatus = 'draft' | 'published';

export interface TemplateView {
  id: string;
  object: 'template';
  name: string;
  subject: string | null;
  html: string;
  text: string | null;
  alias: string | null;
  from: string | null;
  reply_to: string[] | null;
  variables: Array<TemplateVariable & { created_at: string; updated_at: string }> | null;
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
export interface TemplateContent {
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
}

const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const VARIABLE_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,49}$/;
export const MAX_TEMPLATE_VARIABLES = 50;

export function templateView(t: Template): TemplateView {
  const { variables } = t;
  const updated = toIso(t.updated_at);
  return {
    id: t.id,
    object: 'template',
    name: t.name,
    subject: t.subject === '' ? null : t.subject,
    html: t.html,
    text: t.text,
    alias: t.alias,
    from: t.from_address,
    reply_to: t.reply_to,
    variables: variables?.map((v) => ({ ...v, created_at: updated, updated_at: updated })) ?? null,
    status: t.published_at === null ? 'draft' : 'published',
    published_at: toIsoOrNull(t.published_at),
    has_unpublished_versions: t.published_at !== null && t.updated_at > t.published_at,
    current_version_id: t.id,
    created_at: toIso(t.created_at),
    updated_at: updated,
  };
}

function checkVariables(variables: NonNullable<TemplateInput['variables']>): TemplateVariable[] {
  if (variables.length > MAX_TEMPLATE_VARIABLES) throw validationError('variables', `at most ${MAX_TEMPLATE_VARIABLES} variables`);
  const seen = new Set<string>();
  return variables.map((v, i) => {
    if (!VARIABLE_KEY.test(v.key)) throw validationError(`variables[${i}].key`, 'must be letters, digits and underscores (at most 50), not starting with a digit');
    if (seen.has(v.key)) throw validationError(`variables[${i}].key`, `${v.key} is declared twice`);
    seen.add(v.key);
    const fallback = v.fallback_value ?? null;
    if (fallback !== null && typeof fallback !== v.type) throw validationError(`variables[${i}].fallback_value`, `must be a ${v.type}, as the variable's type`);
    return { key: v.key, type: v.type, fallback_value: fallback };
  });
}

/** Row changes for the given fields, validated. */
function fieldsOf(input: Partial<TemplateInput>): Partial<Template> {
  const changes: Partial<Template> = {};
  if (input.name !== undefined) {
    if (input.name.trim() === '' || input.name.length > 200) throw validationError('name', 'must be 1 to 200 characters');
    changes.name = input.name.trim();
  }
  if (input.subject !== undefined) {
    const subject = input.subject ?? '';
    singleLine('subject', subject);
    if (subject.length > 998) throw validationError('subject', 'must be at most 998 characters');
    changes.subject = subject;
  }
  if (input.html !== undefined) {
    if (input.html.trim() === '') throw validationError('html', 'must not be empty');
    changes.html = input.html;
  }
  if (input.text !== undefined) changes.text = input.text;
  if (input.alias !== undefined) {
    if (input.alias !== null && (!ALIAS.test(input.alias) || isUuid(input.alias))) throw validationError('alias', 'must be 1 to 100 letters, digits, dots, dashes or underscores (not a uuid)');
    changes.alias = input.alias;
  }
  if (input.from !== undefined) {
    if (input.from !== null) parseMailbox('from', input.from);
    changes.from_address = input.from;
  }
  if (input.reply_to !== undefined) {
    changes.reply_to = input.reply_to === null ? null : parseMailboxes('reply_to', input.reply_to).map((a) => (a.name ? `${JSON.stringify(a.name)} <${a.address}>` : a.address));
  }
  if (input.variables !== undefined) changes.variables = input.variables === null ? null : checkVariables(input.variables);
  return changes;
}

const defaultsOf = (variables: TemplateVariable[] | null): Variables =>
  Object.fromEntries((variables ?? []).filter((v) => v.fallback_value !== null).map((v) => [v.key, v.fallback_value]));

export function createTemplateService(deps: ServiceDeps): TemplateService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, idOrAlias: string): Promise<Template> => {
    const found = isUuid(idOrAlias) ? await findTemplate(db, workspaceId, idOrAlias.toLowerCase()) : await findTemplateByAlias(db, workspaceId, idOrAlias);
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
      ...fields,
    };
    await saveTemplate(db, row);
    return templateView(row);
  };

  return {
    async create(workspaceId, input) {
      if (typeof input.name !== 'string') throw validationError('name', 'is required');
      if (typeof input.html !== 'string') throw validationError('html', 'is required');
      return insert(workspaceId, fieldsOf(input));
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([listTemplates(db, workspaceId, page), countTemplates(db, workspaceId)]);
      return { items: rows.map(templateView), total, more };
    },

    get: async (workspaceId, idOrAlias) => templateView(await find(workspaceId, idOrAlias)),

    async content(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      const version: PublishedTemplate = t.published ?? { subject: t.subject, html: t.html, text: t.text, from: t.from_address, reply_to: t.reply_to, variables: t.variables };
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
      const changes = fieldsOf(input);
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
      const published: PublishedTemplate = { subject: t.subject, html: t.html, text: t.text, from: t.from_address, reply_to: t.reply_to, variables: t.variables };
      // The update time stays: publishing does not make the content newer than what is published.
      await updateTemplate(db, workspaceId, t.id, { published, published_at: Math.max(clock.now(), t.updated_at) });
      return templateView(await find(workspaceId, t.id));
    },

    async duplicate(workspaceId, idOrAlias) {
      const t = await find(workspaceId, idOrAlias);
      const name = `${t.name} (copy)`.slice(0, 200);
      return insert(workspaceId, { name, subject: t.subject, html: t.html, text: t.text, from_address: t.from_address, reply_to: t.reply_to, variables: t.variables });
    },
  };
}
