import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupOf, providerOfHost, providerTable } from '../../../src/delivery/providers.js';
import { classifyResponse } from '../../../src/delivery/classify-response.js';
import { rulesWith } from '../../../src/delivery/response-rules.js';

describe('mailbox providers by MX host', () => {
  const table = providerTable({});

  it('knows the big providers by their MX host names', () => {
    const cases: Array<[string, string | null]> = [
      ['aspmx.l.google.com', 'google'],
      ['alt1.aspmx.l.google.com', 'google'],
      ['gmail-smtp-in.l.google.com', 'google'],
      ['smtp.google.com', 'google'],
      ['hotmail-com.olc.protection.outlook.com', 'microsoft'],
      ['contoso-com.mail.protection.outlook.com', 'microsoft365'],
      ['contoso-com.l-v1.mx.microsoft', 'microsoft365'],
      ['mta5.am0.yahoodns.net', 'yahoo'],
      ['mx01.mail.icloud.com', 'apple'],
      ['mx00.emig.gmx.net', 'gmx'],
      ['mx-ha03.web.de', 'gmx'],
      ['mxs.mail.ru', 'mailru'],
      ['mx.yandex.net', 'yandex'],
      ['mx.zoho.eu', 'zoho'],
      ['mx0a-00123401.pphosted.com', 'proofpoint'],
      ['us-smtp-inbound-1.mimecast.com', 'mimecast'],
      ['in1-smtp.messagingengine.com', 'fastmail'],
      ['ASPMX.L.GOOGLE.COM.', 'google'],
      ['notgoogle.com', null],
      ['google.com.evil.test', null],
      ['mx.example.net', null],
    ];
    for (const [host, provider] of cases) assert.equal(providerOfHost(table, host), provider, host);
  });

  it("config adds providers, replaces a provider's patterns, or removes one", () => {
    const t = providerTable({ acme: ['mx.acme-gateway.net'], google: ['*.googlemail.com'], yahoo: [] });
    assert.equal(providerOfHost(t, 'in.mx.acme-gateway.net'), 'acme');
    assert.equal(providerOfHost(t, 'aspmx.l.google.com'), null, 'google.com no longer listed');
    assert.equal(providerOfHost(t, 'x.googlemail.com'), 'google');
    assert.equal(providerOfHost(t, 'mta5.am0.yahoodns.net'), null);
  });

  it('groups a domain by its provider, else its most preferred MX host (stable among equals), else itself', () => {
    assert.deepEqual(
      groupOf(
        table,
        'shop.test',
        [
          { name: 'alt1.aspmx.l.google.com', priority: 5 },
          { name: 'aspmx.l.google.com', priority: 1 },
        ],
        false,
      ),
      { group: 'google', provider: 'google' },
    );
    assert.deepEqual(
      groupOf(
        table,
        'a.test',
        [
          { name: 'mx2.host.test', priority: 10 },
          { name: 'mx1.host.test', priority: 10 },
        ],
        false,
      ),
      { group: 'mx1.host.test', provider: null },
    );
    assert.deepEqual(
      groupOf(
        table,
        'a.test',
        [
          { name: 'mx1.host.test', priority: 10 },
          { name: 'mx2.host.test', priority: 10 },
        ],
        false,
      ),
      { group: 'mx1.host.test', provider: null },
    );
    assert.deepEqual(
      groupOf(table, 'own.test', [{ name: 'aspmx.l.google.com', priority: 1 }], true),
      { group: 'own.test', provider: null },
      'delivery.domainLimits names it',
    );
    assert.deepEqual(groupOf(table, 'relay.test', [], false), { group: 'relay.test', provider: null });
  });
});

describe('slow-down replies', () => {
  it("the built-in table backs off on the providers' replies", () => {
    for (const reply of [
      '421 4.7.28 [1.2.3.4] Our system has detected an unusual rate of unsolicited mail originating from your IP address.',
      '421 4.7.0 [TSS04] Messages from 1.2.3.4 temporarily deferred due to unexpected volume or user complaints',
      '421 4.7.0 [TS01] Messages from 1.2.3.4 temporarily deferred',
      '451 4.7.650 The mail server [1.2.3.4] has been temporarily rate limited due to IP reputation.',
      '451 4.7.500 Server busy. Please try again later from [1.2.3.4].',
      '421 Too many concurrent SMTP connections from this IP address; please try again later.',
    ]) {
      const c = classifyResponse(reply);
      assert.equal(c.action, 'defer', reply);
      assert.equal(c.slowDown, true, reply);
    }
  });

  it('delivery.slowDownReplies adds replies, checked first', () => {
    const reply = '450 4.2.0 Please come back in a few minutes';
    assert.equal(classifyResponse(reply).slowDown, false);
    const c = classifyResponse(reply, rulesWith(['come back in a few minutes']));
    assert.deepEqual([c.action, c.category, c.slowDown], ['defer', 'rate_limit', true]);
  });
});
