import { z } from 'zod';
import type { DnsRecord, DomainView } from '../../../../services/domains/domains.js';
import type { CheckStatus } from '../../../../checks/check-status.js';
import { validationError } from '../../../../shared/errors.js';
import type { HttpDeps } from '../../context.js';
import { defineRoute } from '../../route.js';
import { DOMAIN_TLS } from '../../../../store/domains.js';

const dnsLabel = z
  .string()
  .regex(
    /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/,
    'must be one DNS label: letters, digits and hyphens, at most 63',
  );

/** Resend's `domains.update` fields, and the return-path subdomain its `domains.create` names. */
const updateDomainBody = z.object({
  open_tracking: z
    .boolean()
    .nullable()
    .optional()
    .describe('Track opens of every email from the domain (null: the server default, marketing mail only)'),
  click_tracking: z
    .boolean()
    .nullable()
    .optional()
    .describe('Track clicks of every email from the domain (null: the server default, marketing mail only)'),
  tls: z.enum(DOMAIN_TLS).optional().describe("enforced: the domain's mail goes over STARTTLS or is not delivered"),
  custom_return_path: dnsLabel
    .nullable()
    .optional()
    .describe('Subdomain of the VERP return path (null: delivery.returnPathSubdomain)'),
  tracking_subdomain: dnsLabel.nullable().optional(),
  capabilities: z
    .object({
      sending: z.enum(['enabled', 'disabled']).optional(),
      receiving: z.enum(['enabled', 'disabled']).optional(),
    })
    .optional()
    .describe('sending stays enabled; receiving is decided by receiving routes'),
});

export const addDomainBody = z.object({
  domain: z.string().min(1).max(253),
  external_id: z.string().max(255).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/** On /v1 the name may come as Resend's `name`; its settings (tracking, TLS, return path) are applied as `domains.update` does, `region` is ignored. */
const v1AddDomainBody = addDomainBody.extend({
  domain: addDomainBody.shape.domain.optional(),
  name: z.string().min(1).max(253).optional(),
});

type RecordStatus = 'pending' | 'verified' | 'failed' | 'not_started';

/**
 * A domain with Resend's fields beside the SPEC's: `name`, `region` (one: this server),
 * `capabilities` and, when asked for, `records` in the SDK's shape. A DKIM record's status
 * comes from the last DNS check (each failure names its record's token); the return-path
 * records' from the last deliverability checks (SPF, return-path MX).
 */
async function render(deps: HttpDeps, workspaceId: string, d: DomainView, withRecords: boolean) {
  const base = {
    object: 'domain' as const,
    ...d,
    name: d.domain_name,
    region: 'self-hosted',
    capabilities: { sending: 'enabled', receiving: 'disabled' },
    // What marketing mail from the domain gets (transactional mail is tracked only when the domain or the request says).
    open_tracking: d.settings.open_tracking ?? deps.config.tracking.opens,
    click_tracking: d.settings.click_tracking ?? deps.config.tracking.clicks,
    tls: d.settings.tls,
    custom_return_path: d.settings.custom_return_path,
    ...(d.settings.tracking_subdomain !== null ? { tracking_subdomain: d.settings.tracking_subdomain } : {}),
  };
  if (!withRecords) return base;
  const dkimStatus = (token: string): RecordStatus =>
    d.status === 'verified'
      ? 'verified'
      : d.last_checked_at === null
        ? 'not_started'
        : d.last_check_error?.includes(token)
          ? 'failed'
          : 'pending';
  const { returnPath } = await deps.services.domains.recordsToPublish(workspaceId, d.id);
  const checked = (status: CheckStatus | undefined): RecordStatus =>
    status === undefined ? 'not_started' : status === 'ok' ? 'verified' : status === 'failing' ? 'failed' : 'pending';
  const returnPathStatus = (r: DnsRecord) =>
    checked(r.type === 'MX' ? d.checks?.return_path_mx?.status : d.checks?.spf.status);
  const record = (kind: 'DKIM' | 'SPF', r: DnsRecord, status: RecordStatus) => {
    const [priority, value] = r.type === 'MX' ? (r.value.split(' ', 2) as [string, string]) : [undefined, r.value];
    return {
      record: kind,
      name: r.name,
      type: r.type,
      ttl: 'Auto',
      status,
      value,
      ...(priority !== undefined ? { priority: Number(priority) } : {}),
    };
  };
  return {
    ...base,
    records: [
      ...d.dns_records.map((r, i) => record('DKIM', r, dkimStatus(d.dkim_tokens[i]!))),
      ...returnPath.map((r) => record('SPF', r, returnPathStatus(r))),
    ],
  };
}

export const v1DomainRoutes = [
  defineRoute({
    method: 'POST',
    path: '/v1/domains/claim',
    summary: 'Claim a domain other workspaces hold: publish the TXT record the claim names, then verify it',
    operation: 'domains.write',
    scope: 'domains:write',
    status: 201,
    body: z
      .object({ name: z.string().max(253).optional(), region: z.string().optional() })
      .extend(updateDomainBody.omit({ capabilities: true }).shape),
    handler: ({ deps, workspace, body }) => deps.services.domainClaims.create(workspace.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id/claim',
    summary: "A domain claim (by the claim's id, the domain name, or the id of the domain it gave)",
    operation: 'domains.read',
    scope: 'domains:read',
    handler: ({ deps, workspace, params }) => deps.services.domainClaims.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains/:id/claim/verify',
    summary:
      "Look up the claim's TXT record now; when it is there and nothing blocks, the domain becomes this workspace's",
    operation: 'domains.write',
    scope: 'domains:write',
    handler: ({ deps, workspace, params }) => deps.services.domainClaims.verify(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains',
    summary: 'List sending domains (no pagination)',
    operation: 'domains.read',
    scope: 'domains:read',
    handler: async ({ deps, workspace }) => {
      const domains = await Promise.all(
        (await deps.services.domains.list(workspace.id)).map((d) => render(deps, workspace.id, d, false)),
      );
      return { domains, object: 'list', has_more: false, data: domains };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains',
    summary: 'Add a sending domain (`domain`, or `name`); returns its DKIM tokens and the DNS records to publish',
    operation: 'domains.write',
    scope: 'domains:write',
    body: v1AddDomainBody.extend(updateDomainBody.omit({ capabilities: true }).shape),
    status: 201,
    handler: async ({ deps, workspace, body }) => {
      if (body.domain !== undefined && body.name !== undefined && body.domain !== body.name)
        throw validationError('name', 'give domain or name, not both');
      const domain = body.domain ?? body.name;
      if (domain === undefined) throw validationError('domain', 'is required');
      const added = await deps.services.domains.add(workspace.id, {
        domain,
        external_id: body.external_id,
        metadata: body.metadata,
      });
      const { open_tracking, click_tracking, tls, custom_return_path, tracking_subdomain } = body;
      const settings = { open_tracking, click_tracking, tls, custom_return_path, tracking_subdomain };
      if (Object.values(settings).every((v) => v === undefined)) return render(deps, workspace.id, added, true);
      return render(deps, workspace.id, await deps.services.domains.update(workspace.id, added.id, settings), true);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id',
    summary: 'Read one domain (by id or name) with the records to publish',
    operation: 'domains.read',
    scope: 'domains:read',
    handler: async ({ deps, workspace, params }) =>
      render(deps, workspace.id, await deps.services.domains.get(workspace.id, params.id!), true),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/v1/domains/:id',
    summary:
      "Change a domain's open and click tracking, TLS policy, return-path or tracking subdomain, and `ip_pool`, the IP pool of its mail when a message names none (a pool's name; null: the workspace's)",
    operation: 'domains.write',
    scope: 'domains:write',
    body: updateDomainBody.extend({ ip_pool: z.string().max(100).nullable().optional() }),
    handler: async ({ deps, workspace, params, body }) => {
      if (body.capabilities?.sending === 'disabled')
        throw validationError(
          'capabilities.sending',
          'cannot be disabled here: remove the domain to stop sending from it',
        );
      const { ip_pool, ...settings } = body;
      if (ip_pool !== undefined)
        await deps.services.ipPools.setDomainPool(
          workspace.id,
          (await deps.services.domains.get(workspace.id, params.id!)).id,
          ip_pool,
        );
      const updated = await deps.services.domains.update(workspace.id, params.id!, settings);
      return render(deps, workspace.id, updated, true);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains/:id/verify',
    summary:
      'Check DNS now: the domain becomes verified when every DKIM record matches; its deliverability checks are run again',
    operation: 'domains.write',
    scope: 'domains:write',
    handler: async ({ deps, workspace, params }) =>
      render(deps, workspace.id, (await deps.services.domains.verify(workspace.id, params.id!)).domain, true),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/domains/:id',
    summary: 'Remove a domain and its DKIM keys',
    operation: 'domains.write',
    scope: 'domains:write',
    handler: async ({ deps, workspace, params }) => {
      const domain = await deps.services.domains.get(workspace.id, params.id!);
      await deps.services.domains.remove(workspace.id, domain.id);
      return { object: 'domain', id: domain.id, deleted: true };
    },
  }),
];
