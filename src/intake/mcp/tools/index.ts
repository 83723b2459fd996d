import type { Tool } from '../tool.js';
import { broadcastTools } from './broadcasts.js';
import { contactTools } from './contacts.js';
import { deliverabilityTools } from './deliverability.js';
import { domainTools } from './domains.js';
import { emailTools } from './emails.js';
import { inboxTools } from './inboxes.js';
import { templateTools } from './templates.js';

/** Every MCP tool, in the order the tool list and docs/assistants.md show them. */
export const mcpTools: Tool[] = [
  ...templateTools,
  ...emailTools,
  ...contactTools,
  ...broadcastTools,
  ...domainTools,
  ...deliverabilityTools,
  ...inboxTools,
];
