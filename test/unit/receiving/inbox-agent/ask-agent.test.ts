import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_ACTIONS, parseAgentAnswer, systemPrompt } from '../../../../src/receiving/inbox-agent/ask-agent.js';

describe("reading the inbox agent's answer", () => {
  it('takes a JSON object of known actions, fenced or not', () => {
    assert.deepEqual(parseAgentAnswer('{"actions":[{"type":"archive"}]}'), { actions: [{ type: 'archive' }] });
    assert.deepEqual(parseAgentAnswer('```json\n{"actions":[]}\n```'), { actions: [] });
    assert.deepEqual(parseAgentAnswer('{"actions":[{"type":"add_labels","labels":["A",7,"B"]}]}'), { actions: [{ type: 'add_labels', labels: ['A', 'B'] }] });
  });

  it('refuses the whole answer when any part is not understood', () => {
    assert.match((parseAgentAnswer('I would archive it') as { error: string }).error, /not JSON/);
    assert.match((parseAgentAnswer('{"archive":true}') as { error: string }).error, /no "actions"/);
    assert.match((parseAgentAnswer('{"actions":[{"type":"archive"},{"type":"delete_everything"}]}') as { error: string }).error, /unknown action/);
    assert.match((parseAgentAnswer('{"actions":[{"type":"draft_reply"}]}') as { error: string }).error, /draft_reply needs/);
    assert.match((parseAgentAnswer('{"actions":[{"type":"forward_thread"}]}') as { error: string }).error, /forward_thread needs/);
    assert.match((parseAgentAnswer(null) as { error: string }).error, /no message content/);
  });

  it(`takes ${MAX_ACTIONS} actions and refuses ${MAX_ACTIONS + 1}`, () => {
    const of = (n: number) => JSON.stringify({ actions: Array.from({ length: n }, () => ({ type: 'archive' })) });
    assert.equal((parseAgentAnswer(of(MAX_ACTIONS)) as { actions: unknown[] }).actions.length, MAX_ACTIONS);
    assert.match((parseAgentAnswer(of(MAX_ACTIONS + 1)) as { error: string }).error, /more than/);
  });

  it('tells the model only the actions the settings allow', () => {
    const prompt = systemPrompt({ inboxAddress: 'help@acme.test', instructions: null, tone: 'concise_casual', allowed: ['archive'], transcript: '' });
    assert.match(prompt, /only these actions: archive\./);
    assert.match(prompt, /concise and casual/);
    assert.match(prompt, /no further instructions/);
  });
});
