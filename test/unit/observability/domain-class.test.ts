import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { domainClass } from '../../../src/observability/domain-class.js';

describe('domainClass', () => {
  const cases: Array<[string, string | null, string]> = [
    ['a@gmail.com', null, 'gmail'],
    ['a@GoogleMail.com', null, 'gmail'],
    ['a@hotmail.co.uk', null, 'microsoft'],
    ['a@outlook.com', 'outlook-com.olc.protection.outlook.com', 'microsoft'],
    ['a@yahoo.fr', null, 'yahoo'],
    ['a@icloud.com', null, 'apple'],
    // Custom domains hosted by a provider are known by their MX.
    ['a@example.com', 'aspmx.l.google.com.', 'gmail'],
    ['a@example.org', 'example-org.mail.protection.outlook.com', 'microsoft'],
    ['a@example.net', 'mta5.am0.yahoodns.net', 'yahoo'],
    ['a@example.com', 'mx.example.com', 'other'],
    ['a@example.com', null, 'other'],
    // A look-alike is not the provider.
    ['a@example.com', 'google.com.evil.test', 'other'],
    ['a@notgmail.com', null, 'other'],
  ];
  for (const [recipient, mx, expected] of cases) {
    it(`${recipient} via ${mx ?? 'no MX'} is ${expected}`, () => assert.equal(domainClass(recipient, mx), expected));
  }
});
