import { AppError, notFound, validationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import { findWorkspace, listWorkspaces, saveWorkspace, updateWorkspace } from '../store/workspaces.js';
import type { Plan, Workspace } from '../store/tables.js';
import type { ServiceDeps } from './deps.js';
import { requireAddress } from './send/addresses.js';

export const PLANS: readonly Plan[] = ['starter', 'professional', 'enterprise'];

export interface WorkspaceService {
  create(name: string): Promise<Workspace>;
  list(): Promise<Workspace[]>;
  get(id: string): Promise<Workspace>;
  find(id: string): Promise<Workspace | undefined>;
  /** The workspace used when a command names none: the first one, created on first start. */
  ensureDefault(): Promise<Workspace>;
  setDefaultFrom(id: string, address: string): Promise<Workspace>;
  setPlan(id: string, plan: Plan, custom?: { transactionalPerSecond?: number; marketingPerSecond?: number }): Promise<Workspace>;
}

export function createWorkspaceService(deps: ServiceDeps): WorkspaceService {
  const { db, clock } = deps;

  const create = async (name: string): Promise<Workspace> => {
    const trimmed = name.trim();
    if (trimmed === '' || trimmed.length > 200) throw validationError('name', 'must be 1 to 200 characters');
    const row: Workspace = {
      id: newId(),
      name: trimmed,
      plan: 'starter',
      transactional_per_second: null,
      marketing_per_second: null,
      default_from_email: null,
      created_at: clock.now(),
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
    find: (id) => findWorkspace(db, id),
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
        if (value !== undefined && (!Number.isInteger(value) || value < 1)) throw validationError(field, 'must be a positive integer');
      }
      const updated = await updateWorkspace(db, id, {
        plan,
        transactional_per_second: custom.transactionalPerSecond ?? null,
        marketing_per_second: custom.marketingPerSecond ?? null,
      });
      if (!updated) throw notFound(`Workspace ${id}`);
      return get(id);
    },
  };
}
