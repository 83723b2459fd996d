import { toIso } from '../shared/clock.js';
import type { Workspace } from '../store/workspaces.js';
import { countEmailsSince, countReceivedSince, countRows, countWorkflowRunsSince } from '../store/usage.js';
import type { ServiceDeps } from './deps.js';
import { limitFor } from './rate-limits.js';

/**
 * What a workspace has used against its limits, in Resend's `usage.get` shape. mailsvc's
 * limits are rates (SPEC Limits: messages per second by plan), not quotas: an email period's
 * `limit` is the most the workspace's transactional and marketing rates let it send in that
 * period; a count with no limit here is `null` where the SDK's type allows it, and
 * `Number.MAX_SAFE_INTEGER` (no limit) where it requires a number. Periods are UTC days and
 * months. Test-key mail is not counted (it never leaves).
 */

interface UsageView {
  object: 'usage';
  emails: {
    daily: { used: number; limit: number | null; sent: number; received: number; resets_at: string };
    monthly: { used: number; limit: number; sent: number; received: number; resets_at: string };
  };
  contacts: { used: number; limit: number };
  segments: { used: number; limit: number | null };
  broadcasts: { used: number; limit: null };
  ai_credits: { used: number; limit: number | null; next_increase_at: string | null };
  automation_runs: { used: number; limit: number; resets_at: string };
  domains: { used: number; limit: number | null };
  rate_limit: { limit: number; duration: string };
}

export interface UsageService {
  get(workspace: Workspace): Promise<UsageView>;
}

const DAY = 24 * 3600 * 1000;
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export function createUsageService(deps: ServiceDeps): UsageService {
  const { db, clock } = deps;
  return {
    async get(workspace) {
      const now = new Date(clock.now());
      const dayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
      const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
      const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
      const [sentToday, receivedToday, sentMonth, receivedMonth, runs, contacts, segments, broadcasts, domains] =
        await Promise.all([
          countEmailsSince(db, workspace.id, dayStart),
          countReceivedSince(db, workspace.id, dayStart),
          countEmailsSince(db, workspace.id, monthStart),
          countReceivedSince(db, workspace.id, monthStart),
          countWorkflowRunsSince(db, workspace.id, monthStart),
          countRows(db, 'subscribers', workspace.id),
          countRows(db, 'audiences', workspace.id),
          countRows(db, 'campaigns', workspace.id),
          countRows(db, 'domains', workspace.id),
        ]);
      const transactional = limitFor('send.transactional', workspace).limit;
      const perSecond = transactional + limitFor('send.marketing', workspace).limit;
      return {
        object: 'usage',
        emails: {
          daily: {
            used: sentToday + receivedToday,
            limit: perSecond * (DAY / 1000),
            sent: sentToday,
            received: receivedToday,
            resets_at: toIso(dayStart + DAY),
          },
          monthly: {
            used: sentMonth + receivedMonth,
            limit: perSecond * ((nextMonth - monthStart) / 1000),
            sent: sentMonth,
            received: receivedMonth,
            resets_at: toIso(nextMonth),
          },
        },
        contacts: { used: contacts, limit: NO_LIMIT },
        segments: { used: segments, limit: null },
        broadcasts: { used: broadcasts, limit: null },
        ai_credits: { used: 0, limit: null, next_increase_at: null },
        automation_runs: { used: runs, limit: NO_LIMIT, resets_at: toIso(nextMonth) },
        domains: { used: domains, limit: null },
        rate_limit: { limit: transactional, duration: '1s' },
      };
    },
  };
}
