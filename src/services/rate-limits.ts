import type { Limit } from '../shared/fixed-window.js';
import type { Plan, Workspace } from '../store/workspaces.js';

/** Rate-limit policy (SPEC Limits): which limit each operation has, by plan; counted by shared/fixed-window.ts. */

export type Operation =
  | 'send.transactional'
  | 'send.marketing'
  | 'campaigns.send'
  | 'subscribers.write'
  | 'subscribers.read'
  | 'domains.write'
  | 'domains.read'
  | 'api'
  | 'auth.failure'
  | 'oauth.register';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

const PLAN_RATES: Record<Plan, { transactional: number; marketing: number }> = {
  starter: { transactional: 5, marketing: 500 },
  professional: { transactional: 50, marketing: 1000 },
  // Enterprise numbers are set per workspace (`mailsvc workspaces set-plan`); these apply until then.
  enterprise: { transactional: 50, marketing: 1000 },
};

const FIXED: Record<Exclude<Operation, 'send.transactional' | 'send.marketing'>, Limit> = {
  'campaigns.send': { limit: 5, windowMs: MINUTE, soft: false },
  'subscribers.write': { limit: 100, windowMs: SECOND, soft: false },
  'subscribers.read': { limit: 100, windowMs: SECOND, soft: false },
  'domains.write': { limit: 10, windowMs: MINUTE, soft: false },
  'domains.read': { limit: 60, windowMs: MINUTE, soft: false },
  // Every other authenticated endpoint (the SPEC leaves them open).
  api: { limit: 100, windowMs: SECOND, soft: false },
  // Failed authentications per client address: slows down key guessing.
  'auth.failure': { limit: 20, windowMs: MINUTE, soft: false },
  // Dynamic client registrations (RFC 7591) per client address: an MCP client registers once per install.
  'oauth.register': { limit: 20, windowMs: 60 * MINUTE, soft: false },
};

export function limitFor(
  operation: Operation,
  workspace: Pick<Workspace, 'plan' | 'transactional_per_second' | 'marketing_per_second'> | null,
): Limit {
  if (operation === 'send.transactional' || operation === 'send.marketing') {
    const plan = PLAN_RATES[workspace?.plan ?? 'starter'];
    if (operation === 'send.transactional') {
      return { limit: workspace?.transactional_per_second ?? plan.transactional, windowMs: SECOND, soft: true };
    }
    return { limit: workspace?.marketing_per_second ?? plan.marketing, windowMs: SECOND, soft: false };
  }
  return FIXED[operation];
}
