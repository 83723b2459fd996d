import type { Services } from '../../src/services/index.js';
import type { Db } from '../../src/store/infra/db.js';

/**
 * A workflow for the crash and cluster tests: on `event`, send an email, wait a second, send
 * another. Both emails name `{{n}}` from the event's payload.
 */
export async function createTwoSendWorkflow(
  services: Services,
  workspaceId: string,
  options: { event: string; from: string },
): Promise<string> {
  const first = await services.templates.create(workspaceId, {
    name: 'First',
    subject: 'First for {{n}}',
    html: '<p>first</p>',
  });
  const second = await services.templates.create(workspaceId, {
    name: 'Second',
    subject: 'Second for {{n}}',
    html: '<p>second</p>',
  });
  const vars = { n: { var: 'event.n' } };
  const workflow = await services.workflows.create(workspaceId, {
    name: 'Two sends',
    status: 'enabled',
    steps: [
      { key: 'start', type: 'trigger', config: { event_name: options.event } },
      { key: 'first', type: 'send_email', config: { template: { id: first.id, variables: vars }, from: options.from } },
      { key: 'pause', type: 'delay', config: { duration: '1 second' } },
      {
        key: 'second',
        type: 'send_email',
        config: { template: { id: second.id, variables: vars }, from: options.from },
      },
    ],
    connections: [
      { from: 'start', to: 'first' },
      { from: 'first', to: 'pause' },
      { from: 'pause', to: 'second' },
    ],
  });
  return workflow.id;
}

/** How many emails each send step of each run created (`<run>/<step>` -> count), and their Message-IDs. */
export async function emailsPerSendStep(db: Db): Promise<{ perStep: Map<string, number>; messageIds: Set<string> }> {
  const emails = await db
    .selectFrom('emails')
    .select(['metadata', 'message_id'])
    .where('intake', '=', 'workflow')
    .execute();
  const perStep = new Map<string, number>();
  for (const e of emails) {
    const m = JSON.parse(e.metadata!) as { workflow_run_id: string; workflow_step: string };
    const key = `${m.workflow_run_id}/${m.workflow_step}`;
    perStep.set(key, (perStep.get(key) ?? 0) + 1);
  }
  return { perStep, messageIds: new Set(emails.map((e) => e.message_id)) };
}
