import type { Route } from '../route.js';
import { legacyDomainRoutes } from './legacy/domains.js';
import { legacyMarketingRoutes } from './legacy/marketing.js';
import { legacySendRoutes } from './legacy/send.js';
import { legacyWebhookRoutes } from './legacy/webhooks.js';
import { v1ApiKeyRoutes } from './v1/api-keys.js';
import { v1AutomationRoutes, v1WorkflowEventRoutes } from './v1/automations.js';
import { v1BroadcastPreviewRoutes, v1BroadcastRoutes } from './v1/broadcasts.js';
import { v1ContactRoutes } from './v1/contacts.js';
import { v1ContactImportRoutes } from './v1/contact-imports.js';
import { v1SegmentRoutes } from './v1/segments.js';
import { v1TopicRoutes } from './v1/topics.js';
import { v1DomainRoutes } from './v1/domains.js';
import { v1DomainReportRoutes, v1EmailMetricsRoutes, v1ReputationRoutes } from './v1/deliverability.js';
import { v1EmailContentRoutes, v1EmailRoutes } from './v1/emails.js';
import { v1InboxRoutes } from './v1/inboxes.js';
import { v1InboxThreadRoutes } from './v1/inbox-threads.js';
import { v1InboxDraftRoutes } from './v1/inbox-drafts.js';
import { v1IpPoolRoutes } from './v1/ip-pools.js';
import { v1DeliveryRoutes } from './v1/delivery.js';
import { v1ReceivedEmailRoutes, v1RouteRoutes } from './v1/receiving.js';
import { v1MarketingRoutes } from './v1/marketing.js';
import { v1SuppressionRoutes } from './v1/suppressions.js';
import { v1TemplateRoutes, v1TemplateStudioRoutes } from './v1/templates.js';
import { v1WebhookRoutes } from './v1/webhooks.js';
import { v1AccountRoutes } from './v1/account.js';
import { v1ContactPropertyRoutes } from './v1/contact-properties.js';

/** Every authenticated API route of both surfaces. */
export const apiRoutes: Route[] = [
  // Before the email routes: /v1/emails/:id would match /v1/emails/receiving and /v1/emails/metrics.
  ...v1ReceivedEmailRoutes,
  ...v1EmailMetricsRoutes,
  ...v1EmailRoutes,
  ...v1EmailContentRoutes,
  ...v1TemplateRoutes,
  ...v1TemplateStudioRoutes,
  ...v1DomainRoutes,
  ...v1ReputationRoutes,
  ...v1DomainReportRoutes,
  ...v1SuppressionRoutes,
  ...v1MarketingRoutes,
  // Before the contact routes: /v1/contacts/:id would match /v1/contacts/imports.
  ...v1ContactImportRoutes,
  ...v1ContactRoutes,
  ...v1SegmentRoutes,
  ...v1TopicRoutes,
  ...v1BroadcastRoutes,
  ...v1BroadcastPreviewRoutes,
  ...v1ApiKeyRoutes,
  ...v1WebhookRoutes,
  ...v1RouteRoutes,
  ...v1InboxRoutes,
  ...v1InboxThreadRoutes,
  ...v1InboxDraftRoutes,
  ...v1IpPoolRoutes,
  ...v1DeliveryRoutes,
  ...v1AutomationRoutes,
  ...v1WorkflowEventRoutes,
  ...v1AccountRoutes,
  ...v1ContactPropertyRoutes,
  ...legacySendRoutes,
  ...legacyMarketingRoutes,
  ...legacyDomainRoutes,
  ...legacyWebhookRoutes,
];
