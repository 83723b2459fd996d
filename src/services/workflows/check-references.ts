import { EVENT_TYPES, isWorkflowTriggerEvent } from '../../events/event-types.js';
import { domainOf } from '../../shared/domain-name.js';
import { isAppError, notFound, validationError } from '../../shared/errors.js';
import { parseMailbox, parseMailboxes, singleLine } from '../../messages/addresses.js';
import { findWorkspace, type Workspace } from '../../store/workspaces.js';
import type { Db } from '../../store/infra/db.js';
import type { AudienceService } from '../marketing/audiences.js';
import type { SendService } from '../send/send-email.js';
import type { TemplateService } from '../templates.js';
import type { Definition, SendEmailConfig } from './definition.js';
import { isOneOf } from '../../shared/one-of.js';

export interface ReferenceDeps {
  db: Db;
  templates: TemplateService;
  audiences: AudienceService;
  send: SendService;
}

/** A platform event may start a workflow only if it concerns a subscriber; any other name is a custom event. */
function checkEventName(field: string, name: string): void {
  if (isOneOf(EVENT_TYPES, name) && !isWorkflowTriggerEvent(name)) {
    throw validationError(
      field,
      `${name} is not about one subscriber, so it cannot start or resume a run; platform events that can: subscriber.created, subscriber.updated, subscriber.unsubscribed, email.opened, email.clicked, email.bounced`,
    );
  }
}

/** Everything a definition names must exist when it is saved: templates, segments, sending domains. */
export async function checkReferences(deps: ReferenceDeps, workspaceId: string, definition: Definition): Promise<void> {
  const workspace = await findWorkspace(deps.db, workspaceId);
  if (!workspace) throw notFound(`Workspace ${workspaceId}`);
  for (const [i, step] of definition.steps.entries()) {
    const at = `steps[${i}].config`;
    if (step.type === 'trigger' || step.type === 'wait_for_event')
      checkEventName(`${at}.event_name`, step.config.event_name);
    if (step.type === 'send_email') await checkSendEmail(deps, workspace, at, step.config);
    if (step.type === 'add_to_segment') await checkSegment(deps, workspaceId, at, step.config.segment_id);
  }
}

/** The template exists; the subject is one line; the sender is on a domain of the workspace. */
async function checkSendEmail(
  deps: ReferenceDeps,
  workspace: Workspace,
  at: string,
  c: SendEmailConfig,
): Promise<void> {
  await deps.templates.get(workspace.id, c.template.id).catch((err: unknown) => {
    throw isAppError(err) && err.code === 'not_found'
      ? validationError(`${at}.template.id`, `template ${c.template.id} not found`)
      : err;
  });
  if (c.subject !== undefined) {
    singleLine(`${at}.subject`, c.subject);
    if (c.subject.trim() === '' || c.subject.length > 998)
      throw validationError(`${at}.subject`, 'must be 1 to 998 characters');
  }
  if (c.from !== undefined) {
    const from = parseMailbox(`${at}.from`, c.from);
    // A domain added to the workspace; it must be verified by the time a live run sends.
    await deps.send.checkSender(workspace, from.address, true).catch((err: unknown) => {
      throw isAppError(err) && err.code === 'forbidden'
        ? validationError(`${at}.from`, `${domainOf(from.address)} is not a domain of this workspace`)
        : err;
    });
  }
  if (c.reply_to !== undefined) parseMailboxes(`${at}.reply_to`, c.reply_to);
}

async function checkSegment(deps: ReferenceDeps, workspaceId: string, at: string, segmentId: string): Promise<void> {
  await deps.audiences.get(workspaceId, segmentId).catch((err: unknown) => {
    throw isAppError(err) && err.code === 'not_found'
      ? validationError(`${at}.segment_id`, `segment ${segmentId} not found`)
      : err;
  });
}
