import { z } from 'zod';
import { GRANULARITIES } from '../../../../services/deliverability/email-metrics.js';
import { defineRoute } from '../../route.js';

const reportQuery = z.object({ days: z.coerce.number().int().min(1).max(366).default(30) });

const metricsQuery = z.object({
  start_date: z.string().max(64).optional(),
  end_date: z.string().max(64).optional(),
  timezone: z.string().max(64).optional(),
  granularity: z.enum(GRANULARITIES).optional(),
  metrics: z.string().max(1000).optional(),
  dimensions: z.string().max(100).optional(),
  domain_id: z.string().max(4000).optional(),
  email_id: z.string().max(4000).optional(),
  broadcast_id: z.string().max(4000).optional(),
});

/** Before the email routes: /v1/emails/:id would match /v1/emails/metrics. */
export const v1EmailMetricsRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/emails/metrics',
    summary:
      "Counts and rates of the workspace's live mail (sent, delivered, bounced, complained, opened, clicked, …) over a date range, optionally per period and sending domain; the shape of Resend's emails.metrics",
    operation: 'api',
    scope: 'emails:read',
    query: metricsQuery,
    handler: ({ deps, workspace, query }) => deps.services.emailMetrics.metrics(workspace.id, query),
  }),
];

/** Deliverability: the reputation guard of each sending domain, and resuming a paused one. */
export const v1ReputationRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/reputation',
    summary:
      "The reputation guard's view of every sending domain: hard-bounce and complaint rates, state (sending, warning, paused) and held mail",
    operation: 'api',
    scope: 'domains:read',
    handler: async ({ deps, workspace }) => ({
      object: 'list',
      data: await deps.services.reputation.list(workspace.id),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id/reputation',
    summary: "One sending domain's reputation guard state (by id or name)",
    operation: 'api',
    scope: 'domains:read',
    handler: ({ deps, workspace, params }) => deps.services.reputation.get(workspace.id, params.id!),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/domains/:id/reputation/resume',
    summary: 'Resumes a paused domain: its held marketing mail is released, and its rates count from now on',
    operation: 'api',
    scope: 'domains:write',
    handler: ({ deps, workspace, params }) => deps.services.reputation.resume(workspace.id, params.id!),
  }),
];

/** DMARC aggregate and TLS reports received about a domain, per day. */
export const v1DomainReportRoutes = [
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id/dmarc-reports',
    summary:
      'DMARC aggregate reports about a verified domain, per day and source IP: messages, SPF, DKIM and alignment passes, dispositions (days=1..366, default 30)',
    operation: 'api',
    scope: 'domains:read',
    query: reportQuery,
    handler: ({ deps, workspace, params, query }) =>
      deps.services.reportSummaries.dmarcSummary(workspace.id, params.id!, query.days),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/domains/:id/tls-reports',
    summary:
      'TLS reports (RFC 8460) about a verified domain, per day: successful and failed sessions, failures by type and receiving MX (days=1..366, default 30)',
    operation: 'api',
    scope: 'domains:read',
    query: reportQuery,
    handler: ({ deps, workspace, params, query }) =>
      deps.services.reportSummaries.tlsSummary(workspace.id, params.id!, query.days),
  }),
];
