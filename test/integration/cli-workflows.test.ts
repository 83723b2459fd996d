import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCliProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/delivery.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { repoPath } from '../../scripts/repo-root.js';

/** `mailsvc workflows …` against the database of a running server, whose runner acts on what the CLI queues. */
describe('mailsvc workflows', () => {
  let server: TestServer;
  let env: Record<string, string>;

  before(async () => {
    server = await startTestServer({ workflows: { pollInterval: 50 } });
    env = { MAILSVC_DATABASE: server.config.database, MAILSVC_DATA_DIR: server.dir, MAILSVC_LOG_LEVEL: 'warn' };
  });
  after(async () => {
    await server?.close();
  });

  const cli = async (...args: string[]) => runCliProcess(args, env);
  const json = async (...args: string[]) => {
    const res = await cli(...args, '--json');
    assert.equal(res.code, 0, res.stderr);
    return JSON.parse(res.stdout);
  };

  it('creates, lists, shows, runs (send-event), inspects, stops and removes a workflow', async () => {
    const file = join(server.dir, 'welcome.json');
    writeFileSync(
      file,
      JSON.stringify({
        name: 'Tag the pros',
        steps: [
          { key: 'start', type: 'trigger', config: { event_name: 'plan.chosen' } },
          {
            key: 'pro',
            type: 'condition',
            config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' },
          },
          { key: 'tag', type: 'contact_update', config: { properties: { plan: { var: 'event.plan' } } } },
        ],
        connections: [
          { from: 'start', to: 'pro' },
          { from: 'pro', to: 'tag', type: 'condition_met' },
        ],
      }),
    );
    const created = await json('workflows', 'create', '--file', file, '--enable');
    assert.equal(created.status, 'enabled');
    const text = await cli('workflows', 'show', created.id);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Tag the pros .*enabled, triggered by plan\.chosen/);
    assert.match(text.stdout, /pro \[condition\]\s+=> condition_met -> tag/);
    const list = await cli('workflows', 'list');
    assert.match(list.stdout, new RegExp(`${created.id}\\s+Tag the pros\\s+enabled\\s+plan\\.chosen`));

    const sent = await json(
      'workflows',
      'send-event',
      'plan.chosen',
      '--email',
      'cli@dest.test',
      '--payload',
      '{"plan":"pro"}',
    );
    assert.equal(sent.event, 'plan.chosen');
    const run = await eventually(
      async () => {
        const { runs } = await json('workflows', 'runs', created.id);
        return runs[0]?.status === 'completed' ? runs[0] : undefined;
      },
      30_000,
      'the run to complete',
    );
    const detail = await json('workflows', 'run', created.id, run.id);
    assert.deepEqual(
      detail.steps.map((s: any) => [s.key, s.status]),
      [
        ['start', 'completed'],
        ['pro', 'completed'],
        ['tag', 'completed'],
      ],
    );
    const shown = await cli('workflows', 'run', created.id, run.id);
    assert.match(shown.stdout, /tag\s+contact_update\s+completed/);
    const contact = (
      await server.runtime.services.subscribers.list(
        { workspaceId: server.workspaceId, email: 'cli@dest.test' },
        { limit: 1, offset: 0 },
      )
    ).items[0]!;
    assert.deepEqual(contact.metadata, { plan: 'pro' });

    // --test: a test run, as a test key's event would start.
    const tested = await json(
      'workflows',
      'send-event',
      'plan.chosen',
      '--email',
      'cli-test@dest.test',
      '--payload',
      '{"plan":"pro"}',
      '--test',
    );
    assert.equal(tested.test, true);
    const testRun = await eventually(
      async () => {
        const { runs } = await json('workflows', 'runs', created.id);
        return runs.find((r: any) => r.email === 'cli-test@dest.test' && r.status === 'completed');
      },
      30_000,
      'the test run to complete',
    );
    assert.equal((await json('workflows', 'run', created.id, testRun.id)).test, true);

    const stopped = await json('workflows', 'stop', created.id);
    assert.deepEqual(stopped, { id: created.id, status: 'disabled', cancelled_runs: 0 });
    const bad = await cli('workflows', 'create', '--file', join(server.dir, 'missing.json'));
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^mailsvc: file: cannot read .*missing\.json: ENOENT\n$/);
    writeFileSync(
      file,
      JSON.stringify({
        name: 'Broken',
        steps: [{ key: 'a', type: 'delay', config: { duration: '1 day' } }],
        connections: [],
      }),
    );
    const invalid = await cli('workflows', 'create', '--file', file);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /^mailsvc: steps: needs one trigger step\n$/);
    assert.equal((await cli('workflows', 'remove', created.id)).code, 0);
    const gone = await cli('workflows', 'show', created.id);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /not found/);
  });

  it('sets up the shipped example (config/examples/welcome.json) as its README says, and runs it', async () => {
    const examples = `${repoPath('config/examples')}/`;
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'example.com' });
    for (const [name, alias, file] of [
      ['Welcome', 'welcome-email', 'welcome-email.html'],
      ['Pro tips', 'pro-tips', 'pro-tips.html'],
    ] as const) {
      const made = await cli(
        'templates',
        'create',
        '--name',
        name,
        '--alias',
        alias,
        '--subject',
        name,
        '--html-file',
        join(examples, file),
      );
      assert.equal(made.code, 0, made.stderr);
    }
    const created = await json('workflows', 'create', '--file', join(examples, 'welcome.json'));
    assert.equal(created.status, 'enabled');
    assert.equal(created.trigger_event, 'user.signed_up');
    const sent = await json(
      'workflows',
      'send-event',
      'user.signed_up',
      '--email',
      'example-run@dest.test',
      '--payload',
      '{"plan":"pro"}',
      '--test',
    );
    assert.equal(sent.test, true);
    const run = await eventually(
      async () => {
        const { runs } = await json('workflows', 'runs', created.id);
        return runs.find((r: any) => r.email === 'example-run@dest.test' && r.current_step === 'wait');
      },
      30_000,
      'the run to send the welcome and wait three days',
    );
    const detail = await json('workflows', 'run', created.id, run.id);
    const welcome = detail.steps.find((s: any) => s.key === 'welcome');
    assert.equal(welcome.status, 'completed');
    const email = await server.runtime.services.emails.get(server.workspaceId, welcome.output.email_id);
    assert.equal(email.subject, 'Welcome');
    assert.match(email.html ?? '', /Your pro account is ready/);
    assert.equal(email.test, true);
  });
});
