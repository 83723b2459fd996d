import { z } from 'zod';
import { READ, defineTool } from '../tool.js';

export const deliverabilityTools = [
  defineTool({
    name: 'deliverability_domain_health',
    title: "A domain's health",
    description:
      "A sending domain's health: its DNS checks (SPF, DKIM, DMARC, return path, MTA-STS … each ok, warning, failing or not_published) and the reputation guard's view (bounce and complaint rates, whether its marketing mail is paused). Reads only; domains_check looks DNS up again.",
    family: 'deliverability',
    scope: 'domains:read',
    operation: 'domains.read',
    rest: 'GET /v1/domains/:id/reputation',
    annotations: READ,
    input: z.object({ domain: z.string().min(1).max(253).describe('The domain id, or its name') }),
    handler: async ({ deps, caller, args }) => {
      const [domain, reputation] = await Promise.all([
        deps.services.domains.get(caller.workspace.id, args.domain),
        deps.services.reputation.get(caller.workspace.id, args.domain),
      ]);
      return {
        domain: domain.domain_name,
        status: domain.status,
        last_checked_at: domain.last_checked_at,
        checks: domain.checks,
        reputation,
      };
    },
  }),
  defineTool({
    name: 'deliverability_reputation',
    title: "The reputation guard's state",
    description:
      "Every sending domain's bounce and complaint rates and the reputation guard's state (ok, warning, paused: marketing mail held). Reads only.",
    family: 'deliverability',
    scope: 'domains:read',
    operation: 'api',
    rest: 'GET /v1/reputation',
    annotations: READ,
    input: z.object({}),
    handler: async ({ deps, caller }) => ({ domains: await deps.services.reputation.list(caller.workspace.id) }),
  }),
];
