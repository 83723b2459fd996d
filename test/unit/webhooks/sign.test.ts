import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { legacyHeaders, legacySignature, standardHeaders, standardSignature } from '../../../src/webhooks/sign.js';

const body = Buffer.from('{"id":"evt_1","type":"email.delivered","data":{"subject":"Grüße ✓"}}', 'utf8');
const now = Math.floor(Date.now() / 1000);

describe('legacy signing', () => {
  it('is the hex HMAC-SHA256 of "<timestamp>.<body>" keyed with the secret string', () => {
    const secret = 'whsec_legacy-secret-0123456789';
    const expected = createHmac('sha256', secret)
      .update(`1700000000.${body.toString('utf8')}`, 'utf8')
      .digest('hex');
    assert.equal(legacySignature(secret, 1700000000, body), expected);
    assert.notEqual(legacySignature(secret, 1700000001, body), expected);
  });

  it('sends timestamp and event type, and during a rotation the previous secret in its own header', () => {
    const one = legacyHeaders({
      secrets: ['whsec_aaaaaaaaaaaaaaaaaaaa'],
      timestamp: 1700000000,
      body,
      eventType: 'email.bounced',
    });
    assert.deepEqual(Object.keys(one).sort(), ['x-service-event', 'x-service-signature', 'x-service-timestamp']);
    assert.equal(one['x-service-event'], 'email.bounced');
    assert.equal(one['x-service-timestamp'], '1700000000');
    const two = legacyHeaders({
      secrets: ['whsec_bbbbbbbbbbbbbbbbbbbb', 'whsec_aaaaaaaaaaaaaaaaaaaa'],
      timestamp: 1700000000,
      body,
      eventType: 'email.bounced',
    });
    assert.equal(two['x-service-signature-previous'], one['x-service-signature']);
    assert.equal(two['x-service-signature'], legacySignature('whsec_bbbbbbbbbbbbbbbbbbbb', 1700000000, body));
  });
});

describe('Standard Webhooks signing', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;

  it('verifies with the reference library', () => {
    const headers = standardHeaders({ messageId: 'msg_abc', timestamp: now, secrets: [secret], body });
    assert.match(headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+=*$/);
    const payload = new Webhook(secret).verify(body.toString('utf8'), headers);
    assert.deepEqual(payload, JSON.parse(body.toString('utf8')));
  });

  it('is keyed with the base64-decoded secret, over "{id}.{timestamp}.{body}"', () => {
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key)
      .update(`msg_abc.${now}.${body.toString('utf8')}`)
      .digest('base64');
    assert.equal(standardSignature(secret, 'msg_abc', now, body), `v1,${expected}`);
  });

  it('carries one signature per valid secret, each verifiable on its own', () => {
    const previous = `whsec_${randomBytes(32).toString('base64')}`;
    const headers = standardHeaders({ messageId: 'msg_rot', timestamp: now, secrets: [secret, previous], body });
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    for (const s of [secret, previous])
      assert.doesNotThrow(() => new Webhook(s).verify(body.toString('utf8'), headers));
    assert.throws(
      () => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body.toString('utf8'), headers),
      /No matching signature/,
    );
  });

  it('does not verify a body changed by one byte', () => {
    const headers = standardHeaders({ messageId: 'msg_x', timestamp: now, secrets: [secret], body });
    assert.throws(
      () => new Webhook(secret).verify(body.toString('utf8').replace('1', '2'), headers),
      /No matching signature/,
    );
  });
});
