import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('GET /v1/emails?to= (search by recipient, used by the dashboard)', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer();
    // A test key may send from a domain that is only added.
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'shop.test' });
    key = await server.key({ test: true });
    for (const to of ['Alice.Smith@example.org', 'bob@example.org', 'percent%sign@example.org']) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', { key, body: { from: 'hi@shop.test', to, subject: `to ${to}`, text: 'x' } });
      assert.equal(res.status, 200, show(res));
    }
  });
  after(() => server.close());

  const search = async (to: string) => {
    const res = await request(server.httpUrl, 'GET', `/v1/emails?to=${encodeURIComponent(to)}`, { key });
    assert.equal(res.status, 200, show(res));
    return (res.body.data as Array<{ to: string[] }>).map((e) => e.to[0]);
  };

  it('matches part of an address without regard to case', async () => {
    assert.deepEqual(await search('alice.smith'), ['Alice.Smith@example.org']);
    assert.deepEqual((await search('EXAMPLE.ORG')).length, 3);
    assert.deepEqual(await search('nobody'), []);
  });

  it('takes % and _ literally', async () => {
    assert.deepEqual(await search('%'), ['percent%sign@example.org']);
    assert.deepEqual(await search('_'), []);
  });

  it('refuses an overlong search with 400', async () => {
    const res = await request(server.httpUrl, 'GET', `/v1/emails?to=${'a'.repeat(400)}`, { key });
    assert.equal(res.status, 400, show(res));
    assert.equal(res.body.error.code, 'validation_error');
  });
});
