import { toIso } from '../shared/clock.js';
import { notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import { countTemplates, findTemplate, listTemplates, removeTemplate, saveTemplate, updateTemplate } from '../store/templates.js';
import type { Template } from '../store/tables.js';
import type { ServiceDeps } from './deps.js';
import { singleLine } from './send/addresses.js';

export interface TemplateInput {
  name: string;
  subject: string;
  html: string;
  text?: string | null | undefined;
}

export interface TemplateView {
  id: string;
  object: 'template';
  name: string;
  subject: string;
  html: string;
  text: string | null;
  created_at: string;
  updated_at: string;
}

export const templateView = (t: Template): TemplateView => ({
  id: t.id,
  object: 'template',
  name: t.name,
  subject: t.subject,
  html: t.html,
  text: t.text,
  created_at: toIso(t.created_at),
  updated_at: toIso(t.updated_at),
});

export interface TemplateService {
  create(workspaceId: string, input: TemplateInput): Promise<TemplateView>;
  list(workspaceId: string, page: { limit: number; offset: number }): Promise<{ items: TemplateView[]; total: number }>;
  get(workspaceId: string, id: string): Promise<Template>;
  update(workspaceId: string, id: string, changes: Partial<TemplateInput>): Promise<TemplateView>;
  remove(workspaceId: string, id: string): Promise<void>;
}

const check = (input: Partial<TemplateInput>) => {
  if (input.name !== undefined && (input.name.trim() === '' || input.name.length > 200)) throw validationError('name', 'must be 1 to 200 characters');
  if (input.subject !== undefined) {
    singleLine('subject', input.subject);
    if (input.subject.trim() === '' || input.subject.length > 998) throw validationError('subject', 'must be 1 to 998 characters');
  }
  if (input.html !== undefined && input.html.trim() === '') throw validationError('html', 'must not be empty');
};

export function createTemplateService(deps: ServiceDeps): TemplateService {
  const { db, clock } = deps;
  const get = async (workspaceId: string, id: string): Promise<Template> => {
    const found = isUuid(id) ? await findTemplate(db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Template ${id}`);
    return found;
  };
  return {
    async create(workspaceId, input) {
      check(input);
      const now = clock.now();
      const row: Template = { id: newId(), workspace_id: workspaceId, name: input.name.trim(), subject: input.subject, html: input.html, text: input.text ?? null, created_at: now, updated_at: now };
      await saveTemplate(db, row);
      return templateView(row);
    },
    async list(workspaceId, page) {
      const [rows, total] = await Promise.all([listTemplates(db, workspaceId, page.limit, page.offset), countTemplates(db, workspaceId)]);
      return { items: rows.map(templateView), total };
    },
    get,
    async update(workspaceId, id, changes) {
      check(changes);
      await get(workspaceId, id);
      await updateTemplate(db, workspaceId, id, {
        ...(changes.name !== undefined ? { name: changes.name.trim() } : {}),
        ...(changes.subject !== undefined ? { subject: changes.subject } : {}),
        ...(changes.html !== undefined ? { html: changes.html } : {}),
        ...(changes.text !== undefined ? { text: changes.text } : {}),
        updated_at: clock.now(),
      });
      return templateView(await get(workspaceId, id));
    },
    async remove(workspaceId, id) {
      if (!(await removeTemplate(db, workspaceId, (await get(workspaceId, id)).id))) throw notFound(`Template ${id}`);
    },
  };
}
