import { z } from 'zod';
import { READ, SEND, defineTool } from '../tool.js';

const domain = z.string().min(1).max(253).describe('The domain id, or its name');

export const domainTools = [
  defineTool({
    name: 'domains_list',
    title: 'List sending domains',
    description: "Lists the workspace's sending domains with their verification status and last checks. Reads only.",
    family: 'domains',
    scope: 'domains:read',
    operation: 'domains.read',
    rest: 'GET /v1/domains',
    annotations: READ,
    input: z.object({}),
    handler: async ({ deps, caller }) => ({ domains: await deps.services.domains.list(caller.workspace.id) }),
  }),
  defineTool({
    name: 'domains_records',
    title: 'DNS records to publish',
    description:
      'The DNS records to publish for a domain: the DKIM CNAMEs, the return path (SPF and MX), receiving and report records. Reads only.',
    family: 'domains',
    scope: 'domains:read',
    operation: 'domains.read',
    rest: 'GET /v1/domains/:id',
    annotations: READ,
    input: z.object({ domain }),
    handler: async ({ deps, caller, args }) => {
      const {
        domain: d,
        customer,
        returnPath,
        receiving,
        reports,
      } = await deps.services.domains.recordsToPublish(caller.workspace.id, args.domain);
      return { domain: d.domain_name, status: d.status, dkim: customer, return_path: returnPath, receiving, reports };
    },
  }),
  defineTool({
    name: 'domains_check',
    title: "Check a domain's DNS",
    description:
      "Looks the domain's records up in DNS now (several queries): it becomes verified when every DKIM record matches; SPF, DMARC and the return path are checked again. Writes the results.",
    family: 'domains',
    scope: 'domains:write',
    operation: 'domains.write',
    rest: 'POST /v1/domains/:id/verify',
    // It reads the outside world (DNS) and writes only its own findings: repeating it is harmless.
    annotations: { ...SEND, idempotentHint: true },
    input: z.object({ domain }),
    handler: ({ deps, caller, args }) => deps.services.domains.verify(caller.workspace.id, args.domain),
  }),
  defineTool({
    name: 'domains_remove',
    title: 'Remove a domain',
    description:
      'Removes a sending domain and its DKIM keys: mail can no longer be sent from it until it is added and verified again. Irreversible.',
    family: 'domains',
    scope: 'domains:write',
    operation: 'domains.write',
    rest: 'DELETE /v1/domains/:id',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: z.object({ domain }),
    handler: async ({ deps, caller, args }) => {
      const d = await deps.services.domains.get(caller.workspace.id, args.domain);
      await deps.services.domains.remove(caller.workspace.id, d.id);
      return { id: d.id, domain: d.domain_name, deleted: true };
    },
  }),
];
