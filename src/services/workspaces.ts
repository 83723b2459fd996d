import { AppError, notFound, validationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  findWorkspace,
  listWorkspaces,
  saveWorkspace,
  updateWorkspace,
  type Plan,
  type Workspace,
} from '../store/workspaces.js';
import type { ServiceDeps } from './deps.js';
import { requireAddress } from '../messages/addresses.js';

export const PLANS: readonly Plan[] = ['starter', 'professional', 'enterprise'];

export interface WorkspaceService {
  create(name: string): Promise<Workspace>;
  list(): Promise<Workspace[]>;
  get(id: string): Promise<Workspace>;
  find(id: string): Promise<Workspace | undefined>;
  /** The workspace used when a command names none: the first one, created on first start. */
  ensureDefault(): Promise<Workspace>;
  setDefaultFrom(id: string, address: string): Promise<Workspace>;
  setPlan(
    id: string,
    plan: Plan,
    custom?: { transactionalPerSecond?: number; marketingPerSecond?: number },
  ): Promise<Workspace>;
  /** The name and logo contacts see on the preference centre; a logo of null (or "") removes it. */
  setBranding(
    id: string,
    branding: { name?: string | undefined; logoUrl?: string | null | undefined },
  ): Promise<Workspace>;
}

const MAX_LOGO_URL = 2048;

/** A logo is fetched by the contact's browser from the page: an https URL, nothing else. */
function checkLogoUrl(value: string): string {
  if (value.length > MAX_LOGO_URL || !URL.canParse(value) || new URL(value).protocol !== 'https:')
    throw validationError('logo_url', `must be an https URL of at most ${MAX_LOGO_URL} characters`);
  return value;
}

const checkName = (name: string): string => {
  const trimmed = name.trim();
  if (trimmed === '' || trimmed.length > 200) throw validationError('name', 'must be 1 to 200 characters');
  return trimmed;
};

export function createWorkspaceService(deps: ServiceDeps): WorkspaceService {
  const { db, clock } = deps;

  const create = async (name: string): Promise<Workspace> => {
    const row: Workspace = {
      id: newId(),
      name: checkName(name),
      plan: 'starter',
      transactional_per_second: null,
      marketing_per_second: null,
      default_from_email: null,
      created_at: clock.now(),
      logo_url: null,
      ip_pool_id: null,
    };
    await saveWorkspace(db, row);
    return row;
  };

  const get = async (id: string): Promise<Workspace> => {
    const ws = await findWorkspace(db, id);
    if (!ws) throw notFound(`Workspace ${id}`);
    return ws;
  };

  return {
    create,
    get,
    find: (id) => deps.rows.read('workspaces', id, () => findWorkspace(db, id)),
    list: () => listWorkspaces(db),
    async ensureDefault() {
      const [first] = await listWorkspaces(db);
      return first ?? create('default');
    },
    async setDefaultFrom(id, address) {
      const normalized = requireAddress('address', address);
      if (!(await updateWorkspace(db, id, { default_from_email: normalized }))) throw notFound(`Workspace ${id}`);
      return get(id);
    },
    async setPlan(id, plan, custom = {}) {
      if (!PLANS.includes(plan)) throw validationError('plan', `must be one of ${PLANS.join(', ')}`);
      if (plan !== 'enterprise' && (custom.transactionalPerSecond || custom.marketingPerSecond)) {
        throw new AppError('validation_error', 'custom rates are only for the enterprise plan');
      }
      for (const [field, value] of Object.entries(custom)) {
        if (value !== undefined && (!Number.isInteger(value) || value < 1))
          throw validationError(field, 'must be a positive integer');
      }
      const updated = await updateWorkspace(db, id, {
        plan,
        transactional_per_second: custom.transactionalPerSecond ?? null,
        marketing_per_second: custom.marketingPerSecond ?? null,
      });
      if (!updated) throw notFound(`Workspace ${id}`);
      return get(id);
    },
    async setBranding(id, { name, logoUrl }) {
      const changes = {
        ...(name !== undefined ? { name: checkName(name) } : {}),
        ...(logoUrl !== undefined
          ? { logo_url: logoUrl === null || logoUrl === '' ? null : checkLogoUrl(logoUrl) }
          : {}),
      };
      if (Object.keys(changes).length === 0) throw validationError('name', 'give a name or a logo URL (or both)');
      if (!(await updateWorkspace(db, id, changes))) throw notFound(`Workspace ${id}`);
      return get(id);
    },
  };
}
