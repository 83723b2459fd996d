import type { Migration } from 'kysely';
import type { Dialect } from '../dialect.js';
import { foundation } from './0001-foundation.js';
import { sending } from './0002-sending.js';
import { webhooks } from './0004-webhooks.js';
import { marketing } from './0006-marketing.js';
import { dashboard } from './0009-dashboard.js';
import { cluster } from './0010-cluster.js';
import { resend } from './0013-resend.js';
import { receiving } from './0014-receiving.js';
import { deliverability } from './0015-deliverability.js';
import { workflows } from './0016-workflows.js';
import { kernel } from './0017-kernel.js';
import { eventOrder } from './0020-event-order.js';
import { statsTest } from './0021-stats-test.js';
import { emailSubscriberIndex } from './0022-email-subscriber-index.js';
import { inboxes } from './0044-inboxes.js';
import { inboxAgentRuns } from './0045-inbox-agent-runs.js';
import { inboxAgentForwardTo } from './0090-inbox-agent-forward-to.js';
import { campaignGroupCuts } from './0091-campaign-group-cuts.js';
import { auditLog } from './0092-audit-log.js';
import { users } from './0093-users.js';
import { twoFactorAndSessions } from './0100-two-factor-and-sessions.js';
import { oauth } from './0120-oauth.js';
import { domainSettings } from './0046-domain-settings.js';
import { apiLogs } from './0047-api-logs.js';
import { templateStudio } from './0080-template-studio.js';
import { eventDefinitions } from './0048-event-definitions.js';
import { contactProperties } from './0049-contact-properties.js';
import { domainClaims } from './0054-domain-claims.js';
import { contactImports } from './0064-contact-imports.js';
import { segmentConditions } from './0065-segment-conditions.js';
import { importAndAgentLeases } from './0070-import-and-agent-leases.js';
import { abTests } from './0040-ab-tests.js';
import { rowNotify } from './0043-row-notify.js';
import { guardEngagement } from './0041-guard-engagement.js';
import { workspaceBranding } from './0042-workspace-branding.js';
import { ipPools } from './0050-ip-pools.js';
import { destinationState } from './0051-destination-state.js';
import { ipWarmup } from './0052-ip-warmup.js';
import { campaignIpPool } from './0053-campaign-ip-pool.js';

/**
 * Migrations in order. Names sort lexically and never change once released; a new schema
 * change is a new entry. Each takes the dialect for the few column types that differ.
 */
export function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '0001-foundation': foundation(dialect),
    '0002-sending': sending(dialect),
    '0004-webhooks': webhooks(),
    '0006-marketing': marketing(dialect),
    '0009-dashboard': dashboard(),
    '0010-cluster': cluster(),
    '0013-resend': resend(),
    '0014-receiving': receiving(dialect),
    '0015-deliverability': deliverability(),
    '0016-workflows': workflows(),
    '0017-kernel': kernel(),
    '0020-event-order': eventOrder(dialect),
    '0021-stats-test': statsTest(dialect),
    '0022-email-subscriber-index': emailSubscriberIndex(),
    '0040-ab-tests': abTests(),
    '0041-guard-engagement': guardEngagement(),
    '0042-workspace-branding': workspaceBranding(),
    '0043-row-notify': rowNotify(dialect),
    '0044-inboxes': inboxes(dialect),
    '0045-inbox-agent-runs': inboxAgentRuns(),
    '0046-domain-settings': domainSettings(),
    '0047-api-logs': apiLogs(),
    '0048-event-definitions': eventDefinitions(),
    '0049-contact-properties': contactProperties(),
    '0050-ip-pools': ipPools(),
    '0051-destination-state': destinationState(),
    '0052-ip-warmup': ipWarmup(),
    '0053-campaign-ip-pool': campaignIpPool(),
    '0054-domain-claims': domainClaims(),
    '0064-contact-imports': contactImports(),
    '0065-segment-conditions': segmentConditions(),
    '0070-import-and-agent-leases': importAndAgentLeases(dialect),
    '0080-template-studio': templateStudio(),
    '0090-inbox-agent-forward-to': inboxAgentForwardTo(),
    '0091-campaign-group-cuts': campaignGroupCuts(),
    '0092-audit-log': auditLog(),
    '0093-users': users(),
    '0100-two-factor-and-sessions': twoFactorAndSessions(),
    '0120-oauth': oauth(),
  };
}
