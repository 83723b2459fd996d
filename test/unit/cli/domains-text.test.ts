import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeChecks } from '../../../src/cli/domains.js';
import type { DomainView } from '../../../src/services/domains/domains.js';

const check = (status: string, required: boolean, message: string) => ({
  status,
  required,
  message,
  found: null,
  publish: [],
});

describe('mailsvc domains check, as text', () => {
  it('says a check is optional once, whether or not its message says so', () => {
    const domain = {
      domain_name: 'shop.example',
      status: 'verified',
      checks: {
        dkim: check('ok', true, 'All 3 DKIM records resolve.'),
        spf: check('not_published', true, 'bounces.shop.example has no SPF record.'),
        mta_sts: check('not_published', false, 'Optional: MTA-STS makes other servers deliver only over verified TLS.'),
        tls_rpt: check('failing', false, 'The TLS-RPT record needs rua=.'),
      },
    } as unknown as DomainView;
    const text = describeChecks(domain);
    assert.match(text, /^ {2}not_published mta_sts {8}Optional: MTA-STS makes/m);
    assert.match(text, /^ {2}failing {7}tls_rpt {8}\(optional\) The TLS-RPT record needs rua=\.$/m);
    assert.match(text, /^ {2}not_published spf {12}bounces\.shop\.example has no SPF record\.$/m);
    assert.doesNotMatch(text, /\(optional\) Optional/i);
  });
});
