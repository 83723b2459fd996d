import { atomically } from '../store/infra/ambient-transaction.js';
import type { Db } from '../store/infra/db.js';
import { urlForAudit, type AuditFact, type AuditService } from './audit.js';
import type { Services } from './index.js';

/**
 * Which use cases the audit log records, and how each is described: one table. Each entry
 * turns a call's arguments and result into a fact (names and addresses, never a secret: a
 * created key's or webhook's secret is in the result and is not read here). The services are
 * wrapped once, where they are built (runtime.ts): every surface that calls them (API,
 * dashboard, CLI, MCP) is recorded alike, as whoever the surface says acts (shared/actor.ts).
 */

type Method<S, M extends keyof S> = S[M] extends (...args: infer A) => Promise<infer R>
  ? (args: A, result: R) => AuditFact | null
  : never;
type Trail = { [K in keyof Services]?: { [M in keyof Services[K]]?: Method<Services[K], M> } };

const ws = (workspaceId: string | null | undefined) => workspaceId ?? null;

const AUDIT_TRAIL: Trail = {
  workspaces: {
    create: (_, w) => ({
      workspaceId: w.id,
      action: 'workspace.created',
      objectType: 'workspace',
      objectId: w.id,
      detail: { name: w.name },
    }),
    setPlan: ([id, plan]) => ({
      workspaceId: id,
      action: 'workspace.plan_changed',
      objectType: 'workspace',
      objectId: id,
      detail: { plan },
    }),
    setBranding: ([id]) => ({
      workspaceId: id,
      action: 'workspace.branding_changed',
      objectType: 'workspace',
      objectId: id,
    }),
    setDefaultFrom: ([id, address]) => ({
      workspaceId: id,
      action: 'workspace.default_from_changed',
      objectType: 'workspace',
      objectId: id,
      detail: { address },
    }),
  },
  credentials: {
    createKey: (_, r) => ({
      workspaceId: ws(r.credential.workspace_id),
      action: 'api_key.created',
      objectType: 'api_key',
      objectId: r.credential.id,
      detail: { name: r.credential.name, prefix: r.credential.prefix, master: r.credential.master },
    }),
    createToken: (_, r) => ({
      workspaceId: ws(r.credential.workspace_id),
      action: 'oauth_token.created',
      objectType: 'oauth_token',
      objectId: r.credential.id,
      detail: { name: r.credential.name },
    }),
    rename: ([id, workspaceId, name]) => ({
      workspaceId,
      action: 'api_key.renamed',
      objectType: 'api_key',
      objectId: id,
      detail: { name },
    }),
    revoke: (_, r) => ({
      workspaceId: ws(r.workspace_id),
      action: 'api_key.revoked',
      objectType: 'api_key',
      objectId: r.id,
      detail: { name: r.name, prefix: r.prefix },
    }),
  },
  oauth: {
    approve: (_, g) => ({
      workspaceId: g.workspace_id,
      action: 'oauth_grant.created',
      objectType: 'oauth_grant',
      objectId: g.id,
      detail: { client: g.client.name, client_id: g.client_id, user_id: g.user_id, scopes: g.scopes },
    }),
    revokeGrant: (_, g) => ({
      workspaceId: g.workspace_id,
      action: 'oauth_grant.revoked',
      objectType: 'oauth_grant',
      objectId: g.id,
      detail: { client: g.client.name, client_id: g.client_id },
    }),
    // Refresh-token or code reuse, or the client revoking its refresh token at /oauth/revoke.
    endProviderGrant: (_, g) =>
      g
        ? {
            workspaceId: g.workspace_id,
            action: 'oauth_grant.revoked',
            objectType: 'oauth_grant',
            objectId: g.id,
            detail: { client: g.client.name, client_id: g.client_id, by: 'authorization_server' },
          }
        : null,
    createClient: (_, r) => ({
      workspaceId: null,
      action: 'oauth_client.created',
      objectType: 'oauth_client',
      objectId: r.client.client_id,
      detail: { name: r.client.client_name, redirect_uris: r.client.redirect_uris },
    }),
    removeClient: (_, c) => ({
      workspaceId: null,
      action: 'oauth_client.removed',
      objectType: 'oauth_client',
      objectId: c.client_id,
      detail: { name: c.client_name },
    }),
  },
  domains: {
    add: ([workspaceId], d) => ({
      workspaceId,
      action: 'domain.added',
      objectType: 'domain',
      objectId: d.id,
      detail: { name: d.domain_name },
    }),
    update: ([workspaceId], d) => ({
      workspaceId,
      action: 'domain.updated',
      objectType: 'domain',
      objectId: d.id,
      detail: { name: d.domain_name },
    }),
    remove: ([workspaceId, idOrName]) => ({
      workspaceId,
      action: 'domain.removed',
      objectType: 'domain',
      objectId: null,
      detail: { name: idOrName },
    }),
  },
  webhooks: {
    register: ([workspaceId], { webhook: w }) => ({
      workspaceId,
      action: 'webhook.created',
      objectType: 'webhook',
      objectId: w.id,
      detail: { url: urlForAudit(w.url), events: w.events },
    }),
    update: ([workspaceId], w) => ({
      workspaceId,
      action: 'webhook.updated',
      objectType: 'webhook',
      objectId: w.id,
      detail: { url: urlForAudit(w.url), events: w.events },
    }),
    remove: ([workspaceId, id]) => ({ workspaceId, action: 'webhook.deleted', objectType: 'webhook', objectId: id }),
    rotateSecret: ([workspaceId, id]) => ({
      workspaceId,
      action: 'webhook.secret_rotated',
      objectType: 'webhook',
      objectId: id,
    }),
  },
  suppressions: {
    add: ([workspaceId], s) => ({
      workspaceId,
      action: 'suppression.added',
      objectType: 'suppression',
      objectId: s.email,
      detail: { reason: s.reason, scope: s.scope },
    }),
    remove: ([workspaceId], s) => ({
      workspaceId,
      action: 'suppression.removed',
      objectType: 'suppression',
      objectId: s.email,
    }),
    addMany: ([workspaceId, emails]) => ({
      workspaceId,
      action: 'suppression.added',
      objectType: 'suppression',
      objectId: null,
      detail: { count: emails.length },
    }),
    removeMany: ([workspaceId], r) => ({
      workspaceId,
      action: 'suppression.removed',
      objectType: 'suppression',
      objectId: null,
      detail: { count: r.filter((x) => x.deleted).length },
    }),
  },
  campaigns: {
    // A broadcast created with send: true is sent as it is created.
    create: ([workspace], c) => ({
      workspaceId: workspace.id,
      action: c.status === 'draft' ? 'broadcast.created' : 'broadcast.sent',
      objectType: 'broadcast',
      objectId: c.id,
      detail: { name: c.name },
    }),
    send: ([workspace], c) => ({
      workspaceId: workspace.id,
      action: 'broadcast.sent',
      objectType: 'broadcast',
      objectId: c.id,
      detail: { name: c.name },
    }),
    cancel: ([workspaceId], c) => ({
      workspaceId,
      action: 'broadcast.cancelled',
      objectType: 'broadcast',
      objectId: c.id,
      detail: { name: c.name },
    }),
    remove: ([workspaceId], c) => ({
      workspaceId,
      action: 'broadcast.deleted',
      objectType: 'broadcast',
      objectId: c.id,
      detail: { name: c.name },
    }),
    chooseWinner: ([workspaceId, , variant], c) => ({
      workspaceId,
      action: 'broadcast.winner_chosen',
      objectType: 'broadcast',
      objectId: c.id,
      detail: { variant },
    }),
  },
  ipPools: {
    create: (_, p) => ({
      workspaceId: null,
      action: 'ip_pool.created',
      objectType: 'ip_pool',
      objectId: p.id,
      detail: { name: p.name, addresses: p.addresses.map((a) => a.address) },
    }),
    update: (_, p) => ({
      workspaceId: null,
      action: 'ip_pool.updated',
      objectType: 'ip_pool',
      objectId: p.id,
      detail: { name: p.name, addresses: p.addresses.map((a) => a.address) },
    }),
    remove: (_, p) => ({
      workspaceId: null,
      action: 'ip_pool.deleted',
      objectType: 'ip_pool',
      objectId: p.id,
      detail: { name: p.name },
    }),
    startWarmup: ([address]) => ({
      workspaceId: null,
      action: 'ip_warmup.started',
      objectType: 'ip_address',
      objectId: address,
    }),
    stopWarmup: ([address]) => ({
      workspaceId: null,
      action: 'ip_warmup.stopped',
      objectType: 'ip_address',
      objectId: address,
    }),
    setDomainPool: ([workspaceId, domain, pool]) => ({
      workspaceId,
      action: 'domain.ip_pool_changed',
      objectType: 'domain',
      objectId: null,
      detail: { name: domain, ip_pool: pool },
    }),
    setWorkspacePool: ([workspaceId, pool]) => ({
      workspaceId,
      action: 'workspace.ip_pool_changed',
      objectType: 'workspace',
      objectId: workspaceId,
      detail: { ip_pool: pool },
    }),
  },
  users: {
    create: ([input], u) => ({
      workspaceId: input.workspaceId,
      action: 'user.created',
      objectType: 'user',
      objectId: u.id,
      detail: { email: u.email, role: u.role },
    }),
    invite: ([input], r) => ({
      workspaceId: input.workspaceId,
      action: 'user.invited',
      objectType: 'user',
      objectId: null,
      detail: { email: r.email, role: r.role, mailed: r.mailed, ...(r.email_id ? { email_id: r.email_id } : {}) },
    }),
    acceptInvite: (_, r) => ({
      workspaceId: r.workspaceId,
      action: 'user.joined',
      objectType: 'user',
      objectId: r.user.id,
      detail: { email: r.user.email },
    }),
    setRole: ([input], u) => ({
      workspaceId: input.workspaceId,
      action: 'user.role_changed',
      objectType: 'user',
      objectId: u.id,
      detail: { email: u.email, role: u.role },
    }),
    remove: ([input], u) => ({
      workspaceId: input.workspaceId,
      action: 'user.removed',
      objectType: 'user',
      objectId: u.id,
      detail: { email: u.email, role: u.role },
    }),
  },
  templates: {
    create: ([workspaceId], t) => ({
      workspaceId,
      action: 'template.created',
      objectType: 'template',
      objectId: t.id,
      detail: { name: t.name },
    }),
    update: ([workspaceId], t) => ({
      workspaceId,
      action: 'template.updated',
      objectType: 'template',
      objectId: t.id,
      detail: { name: t.name },
    }),
    remove: ([workspaceId], t) => ({
      workspaceId,
      action: 'template.deleted',
      objectType: 'template',
      objectId: t.id,
      detail: { name: t.name },
    }),
    publish: ([workspaceId], t) => ({
      workspaceId,
      action: 'template.published',
      objectType: 'template',
      objectId: t.id,
      detail: { name: t.name },
    }),
    restore: ([workspaceId, , version], t) => ({
      workspaceId,
      action: 'template.restored',
      objectType: 'template',
      objectId: t.id,
      detail: { name: t.name, version },
    }),
  },
  subscribers: {
    upsert: ([workspaceId], r) => ({
      workspaceId,
      action: r.created ? 'contact.created' : 'contact.updated',
      objectType: 'contact',
      objectId: r.subscriber.id,
      detail: { email: r.subscriber.email },
    }),
    update: ([workspaceId], c) => ({
      workspaceId,
      action: 'contact.updated',
      objectType: 'contact',
      objectId: c.id,
      detail: { email: c.email },
    }),
    remove: ([workspaceId], c) => ({
      workspaceId,
      action: 'contact.deleted',
      objectType: 'contact',
      objectId: c.id,
      detail: { email: c.email },
    }),
  },
  audiences: {
    create: ([workspaceId], a) => ({
      workspaceId,
      action: 'segment.created',
      objectType: 'segment',
      objectId: a.id,
      detail: { name: a.name },
    }),
    remove: ([workspaceId, id]) => ({ workspaceId, action: 'segment.deleted', objectType: 'segment', objectId: id }),
  },
  workflows: {
    create: ([workspaceId], w) => ({
      workspaceId,
      action: 'workflow.created',
      objectType: 'workflow',
      objectId: w.id,
      detail: { name: w.name, status: w.status },
    }),
    update: ([workspaceId], w) => ({
      workspaceId,
      action: 'workflow.updated',
      objectType: 'workflow',
      objectId: w.id,
      detail: { name: w.name, status: w.status },
    }),
    stop: ([workspaceId], r) => ({
      workspaceId,
      action: 'workflow.stopped',
      objectType: 'workflow',
      objectId: r.workflow.id,
      detail: { name: r.workflow.name, cancelled: r.cancelled },
    }),
    remove: ([workspaceId, id]) => ({ workspaceId, action: 'workflow.deleted', objectType: 'workflow', objectId: id }),
  },
  routes: {
    add: ([workspaceId], r) => ({
      workspaceId,
      action: 'receiving_route.created',
      objectType: 'receiving_route',
      objectId: r.id,
      detail: { address: r.address, action: r.action },
    }),
    update: ([workspaceId], r) => ({
      workspaceId,
      action: 'receiving_route.updated',
      objectType: 'receiving_route',
      objectId: r.id,
      detail: { address: r.address, action: r.action },
    }),
    remove: ([workspaceId], r) => ({
      workspaceId,
      action: 'receiving_route.deleted',
      objectType: 'receiving_route',
      objectId: r.id,
      detail: { address: r.address },
    }),
  },
  // Each user's own account: who acts is the user (the dashboard's actor); never a code or a secret.
  twoFactor: {
    confirm: ([who]) => ({
      workspaceId: who.workspaceId,
      action: 'user.two_factor_enabled',
      objectType: 'user',
      objectId: who.userId,
    }),
    regenerateRecoveryCodes: ([who]) => ({
      workspaceId: who.workspaceId,
      action: 'user.recovery_codes_replaced',
      objectType: 'user',
      objectId: who.userId,
    }),
    disable: ([who]) => ({
      workspaceId: who.workspaceId,
      action: 'user.two_factor_disabled',
      objectType: 'user',
      objectId: who.userId,
    }),
    reset: (_, r) => ({
      workspaceId: null,
      action: 'user.two_factor_reset',
      objectType: 'user',
      objectId: r.userId,
      detail: { email: r.email, removed: r.removed, sessions_ended: r.sessionsEnded },
    }),
    setRequired: (_, r) => ({
      workspaceId: r.workspaceId,
      action: r.required ? 'workspace.two_factor_required' : 'workspace.two_factor_optional',
      objectType: 'workspace',
      objectId: r.workspaceId,
    }),
  },
  dashboardAuth: {
    signInWithSecondFactor: (_, r) =>
      r.method === 'recovery_code'
        ? {
            workspaceId: null,
            action: 'user.recovery_code_used',
            objectType: 'user',
            objectId: r.userId,
            detail: { recovery_codes_left: r.recoveryCodesLeft },
          }
        : null,
    revokeSession: ([who, id]) => ({
      workspaceId: who.workspaceId,
      action: 'session.revoked',
      objectType: 'session',
      objectId: id,
    }),
    endOtherSessions: ([who], r) => ({
      workspaceId: who.workspaceId,
      action: 'session.others_ended',
      objectType: 'user',
      objectId: who.userId,
      detail: { count: r.ended },
    }),
    changePassword: ([who], r) => ({
      workspaceId: who.workspaceId,
      action: 'user.password_changed',
      objectType: 'user',
      objectId: who.userId,
      detail: { sessions_ended: r.ended },
    }),
  },
  inboxAgent: {
    update: ([workspaceId], r) => ({
      workspaceId,
      action: 'inbox_agent.updated',
      objectType: 'inbox',
      objectId: r.id,
      detail: { actions: r.settings.actions, forward_to: r.settings.forward_to },
    }),
  },
};

/**
 * The services with every use case of the trail run as one unit with its entry: the change
 * and the append of its record commit in one transaction (store/infra/ambient-transaction.ts), so
 * the log never lacks a change that was made, nor shows one that was rolled back; a record
 * that cannot be written fails the change with it. Then, as every service does before it
 * answers, the commit is made durable.
 */
type Methods = Record<string, (...args: unknown[]) => Promise<unknown>>;
const isService = (value: unknown): value is Methods => typeof value === 'object' && value !== null;

export function withAuditTrail(
  services: Services,
  audit: AuditService,
  store: { db: Db; durable(): Promise<void> },
  trail: Trail = AUDIT_TRAIL,
): Services {
  const out: Services = { ...services };
  for (const [name, methods] of Object.entries(trail)) {
    const service: unknown = Reflect.get(services, name);
    if (!isService(service)) continue;
    const wrapped: Methods = { ...service };
    for (const [method, describe] of Object.entries(
      methods as Record<string, (args: unknown[], result: unknown) => AuditFact | null>,
    )) {
      const original = service[method]!;
      wrapped[method] = async (...args: unknown[]) => {
        const result = await atomically(store.db, async () => {
          const r = await original.apply(service, args);
          const fact = describe(args, r);
          if (fact) await audit.record(fact);
          return r;
        });
        await store.durable();
        return result;
      };
    }
    Reflect.set(out, name, wrapped);
  }
  return out;
}
