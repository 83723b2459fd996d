import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parsePage } from '../store/infra/list-page.js';
import type { RunSummary, RunView, WorkflowView } from '../services/workflows/workflow-views.js';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

/** A JSON file (`-` for stdin) as an object, or a validation error naming the option. */
function readJson(option: string, file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw validationError(option, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw validationError(option, `${file} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw validationError(option, `${file} must hold a JSON object`);
  return value as Record<string, unknown>;
}

const counts = (w: WorkflowView) =>
  Object.entries(w.runs)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`)
    .join(', ') || 'no runs';

const describeWorkflow = (w: WorkflowView) =>
  [
    `${w.name} (id ${w.id}): ${w.status}, triggered by ${w.trigger_event}${w.allow_reentry ? ', re-entry allowed' : ''}; ${counts(w)}`,
    ...w.steps.map((s) => {
      const next = w.connections
        .filter((c) => c.from === s.key)
        .map((c) => (c.type === 'default' ? c.to : `${c.type} -> ${c.to}`));
      return `  ${s.key} [${s.type}]${next.length ? `  => ${next.join('; ')}` : ''}`;
    }),
  ].join('\n');

const runRow = (r: RunSummary) => [
  r.id,
  r.status,
  r.email,
  r.current_step ?? '',
  r.next_at ?? '',
  r.started_at,
  r.completed_at ?? '',
  r.error ?? '',
];
const RUN_HEAD = ['RUN', 'STATUS', 'CONTACT', 'AT STEP', 'CONTINUES', 'STARTED', 'ENDED', 'ERROR'];

const describeRun = (r: RunView) =>
  [
    `Run ${r.id} of ${r.automation_id} for ${r.email}: ${r.status}${r.error ? ` (${r.error})` : ''}${r.test ? ' [test]' : ''}`,
    table([
      ['STEP', 'TYPE', 'STATUS', 'STARTED', 'ENDED', 'OUTPUT', 'ERROR'],
      ...r.steps.map((s) => [
        s.key,
        s.type,
        s.status,
        s.started_at ?? '',
        s.completed_at ?? '',
        s.output ? JSON.stringify(s.output) : '',
        s.error ? String(s.error.message) : '',
      ]),
    ]),
  ].join('\n');

export function registerWorkflowCommands(program: Command, io: CliIo): void {
  const workflows = program
    .command('workflows')
    .description('workflows (automations): steps started for a contact by an event, and their runs');
  const ws = (c: Command) => c.option('--workspace <id>', 'workspace (default: the default workspace)');

  ws(
    workflows
      .command('create')
      .description(
        'create a workflow from a JSON file: {"name", "steps", "connections", "status", "allow_reentry"} as in POST /v1/automations',
      ),
  )
    .requiredOption('--file <file>', 'the definition (- for stdin)')
    .option('--enable', "enable it at once (default: the file's status, else draft)")
    .action(async (opts: { workspace?: string; file: string; enable?: boolean }, cmd: Command) => {
      const body = readJson('file', opts.file);
      const workflow = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.create(await workspaceOf(rt, opts.workspace), {
          ...body,
          ...(opts.enable ? { status: 'enabled' } : {}),
        }),
      );
      output(cmd, io, workflow, () => `Created workflow ${describeWorkflow(workflow)}`);
    });

  ws(
    workflows
      .command('update <id>')
      .description(
        "replace a workflow's definition (and name, status, allow_reentry) from a JSON file; runs in progress keep their version",
      ),
  )
    .requiredOption('--file <file>', 'the definition (- for stdin)')
    .action(async (id: string, opts: { workspace?: string; file: string }, cmd: Command) => {
      const body = readJson('file', opts.file);
      const workflow = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.update(
          await workspaceOf(rt, opts.workspace),
          id,
          body as Parameters<typeof rt.services.workflows.update>[2],
        ),
      );
      output(cmd, io, workflow, () => `Updated workflow ${describeWorkflow(workflow)}`);
    });

  ws(workflows.command('list').description('list workflows, newest first'))
    .option('--status <status>', 'draft, enabled or disabled')
    .action(async (opts: { workspace?: string; status?: string }, cmd: Command) => {
      const { items } = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.list(await workspaceOf(rt, opts.workspace), parsePage({ limit: '100' }), opts.status),
      );
      output(cmd, io, items, () =>
        items.length === 0
          ? 'No workflows.'
          : table([
              ['ID', 'NAME', 'STATUS', 'TRIGGER', 'UPDATED'],
              ...items.map((w) => [w.id, w.name, w.status, w.trigger_event, w.updated_at]),
            ]),
      );
    });

  ws(workflows.command('show <id>').description("a workflow's steps, connections and run counts")).action(
    async (id: string, opts: { workspace?: string }, cmd: Command) => {
      const workflow = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.get(await workspaceOf(rt, opts.workspace), id),
      );
      output(cmd, io, workflow, () => describeWorkflow(workflow));
    },
  );

  for (const [name, status, description] of [
    ['enable', 'enabled', 'enable a workflow: its trigger starts runs'],
    ['disable', 'disabled', 'disable a workflow: no new runs (runs in progress go on; `stop` cancels them)'],
  ] as const) {
    ws(workflows.command(`${name} <id>`).description(description)).action(
      async (id: string, opts: { workspace?: string }, cmd: Command) => {
        const workflow = await withRuntime(cmd, io, async (rt) =>
          rt.services.workflows.update(await workspaceOf(rt, opts.workspace), id, { status }),
        );
        output(cmd, io, workflow, () => `${workflow.name} (id ${workflow.id}) is ${workflow.status}.`);
      },
    );
  }

  ws(workflows.command('stop <id>').description('disable a workflow and cancel every run in progress')).action(
    async (id: string, opts: { workspace?: string }, cmd: Command) => {
      const { workflow, cancelled } = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.stop(await workspaceOf(rt, opts.workspace), id),
      );
      output(
        cmd,
        io,
        { id: workflow.id, status: workflow.status, cancelled_runs: cancelled },
        () => `Stopped ${workflow.name} (id ${workflow.id}): disabled, ${cancelled} run(s) cancelled.`,
      );
    },
  );

  ws(workflows.command('duplicate <id>').description('copy a workflow as a draft')).action(
    async (id: string, opts: { workspace?: string }, cmd: Command) => {
      const copy = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.duplicate(await workspaceOf(rt, opts.workspace), id),
      );
      output(cmd, io, copy, () => `Created ${copy.name} (id ${copy.id}), a draft.`);
    },
  );

  ws(workflows.command('remove <id>').description('delete a workflow with its runs')).action(
    async (id: string, opts: { workspace?: string }, cmd: Command) => {
      await withRuntime(cmd, io, async (rt) => rt.services.workflows.remove(await workspaceOf(rt, opts.workspace), id));
      output(cmd, io, { id, deleted: true }, () => `Removed workflow ${id}.`);
    },
  );

  ws(workflows.command('runs <id>').description("a workflow's runs, newest first"))
    .option('--status <status>', 'running, completed, failed or cancelled (several separated by commas)')
    .option('--limit <n>', 'runs to show, 1 to 100', '20')
    .action(async (id: string, opts: { workspace?: string; status?: string; limit: string }, cmd: Command) => {
      const { items, more } = await withRuntime(cmd, io, async (rt) =>
        rt.services.workflows.runs(
          await workspaceOf(rt, opts.workspace),
          id,
          parsePage({ limit: opts.limit }),
          opts.status,
        ),
      );
      output(cmd, io, { runs: items, has_more: more }, () =>
        items.length === 0
          ? 'No runs.'
          : table([RUN_HEAD, ...items.map(runRow)]) + (more ? '\n(more: raise --limit)' : ''),
      );
    });

  ws(
    workflows
      .command('run <id> <run>')
      .description('one run: every step it went through, with times, outputs and errors'),
  ).action(async (id: string, runId: string, opts: { workspace?: string }, cmd: Command) => {
    const run = await withRuntime(cmd, io, async (rt) =>
      rt.services.workflows.run(await workspaceOf(rt, opts.workspace), id, runId),
    );
    output(cmd, io, run, () => describeRun(run));
  });

  ws(
    workflows
      .command('cancel-run <id> <run>')
      .description('cancel one run in progress: its remaining steps are skipped'),
  ).action(async (id: string, runId: string, opts: { workspace?: string }, cmd: Command) => {
    const run = await withRuntime(cmd, io, async (rt) =>
      rt.services.workflows.cancelRun(await workspaceOf(rt, opts.workspace), id, runId),
    );
    output(cmd, io, run, () => `Run ${run.id} is ${run.status}.`);
  });

  ws(
    workflows
      .command('send-event <event>')
      .description('send a custom event for one contact, as POST /v1/events/send does (a running server acts on it)'),
  )
    .option('--email <address>', 'the contact by address (created when a workflow starts for it)')
    .option('--contact <id>', 'the contact by id')
    .option('--payload <json>', 'the event payload, a JSON object', '{}')
    .option('--test', 'a test run: its send steps are simulated, as with a test key')
    .action(
      async (
        event: string,
        opts: { workspace?: string; email?: string; contact?: string; payload: string; test?: boolean },
        cmd: Command,
      ) => {
        let payload: unknown;
        try {
          payload = JSON.parse(opts.payload);
        } catch {
          throw validationError('payload', 'is not JSON');
        }
        const sent = await withRuntime(cmd, io, async (rt) =>
          rt.services.workflows.sendEvent(await workspaceOf(rt, opts.workspace), {
            event,
            email: opts.email,
            contactId: opts.contact,
            payload,
            test: opts.test === true,
          }),
        );
        output(
          cmd,
          io,
          { object: 'event', event: sent.event, id: sent.id, test: opts.test === true },
          () =>
            `Queued ${opts.test ? 'test ' : ''}${sent.event} (id ${sent.id}); the runner of a running server acts on it.`,
        );
      },
    );
}
