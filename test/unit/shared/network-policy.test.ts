import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPublicAddress, NetworkPolicyError, parsePolicyUrl } from '../../../src/shared/network-policy.js';

describe('isPublicAddress', () => {
  const cases: Array<[string, boolean]> = [
    ['8.8.8.8', true],
    ['93.184.216.34', true],
    ['2001:4860:4860::8888', true],
    ['127.0.0.1', false],
    ['127.1.2.3', false],
    ['0.0.0.0', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false], // cloud metadata
    ['100.64.0.1', false], // CGNAT
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['203.0.113.5', false], // documentation
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['::ffff:127.0.0.1', false], // IPv4-mapped loopback
    ['::ffff:10.0.0.1', false],
    ['64:ff9b::7f00:1', false], // NAT64 of 127.0.0.1
    ['2002:7f00:1::', false], // 6to4 of 127.0.0.1
    ['[::1]', false],
    ['not-an-ip', false],
  ];
  for (const [address, expected] of cases) {
    it(`${address} -> ${expected ? 'public' : 'refused'}`, () => assert.equal(isPublicAddress(address), expected));
  }
});

describe('parsePolicyUrl', () => {
  const strict = { allowPrivateNetworks: false };
  const lax = { allowPrivateNetworks: true };

  it('accepts public https URLs and drops the fragment', () => {
    assert.equal(
      parsePolicyUrl('https://hooks.example.com/in?x=1#frag', strict).href,
      'https://hooks.example.com/in?x=1',
    );
  });

  it('refuses http, other schemes, credentials and private IP literals', () => {
    for (const url of [
      'http://hooks.example.com/',
      'ftp://hooks.example.com/',
      'file:///etc/passwd',
      'https://user:pw@hooks.example.com/',
      'https://127.0.0.1/',
      'https://2130706433/', // 127.0.0.1 as one number
      'https://0x7f.1/',
      'https://[::1]/',
      'https://[::ffff:7f00:1]/',
      'https://169.254.169.254/latest/meta-data',
      'not a url',
    ]) {
      assert.throws(() => parsePolicyUrl(url, strict), NetworkPolicyError, url);
    }
  });

  it('with allowPrivateNetworks, http and private literals pass (credentials still do not)', () => {
    assert.equal(parsePolicyUrl('http://127.0.0.1:8080/hook', lax).host, '127.0.0.1:8080');
    assert.throws(() => parsePolicyUrl('http://u:p@127.0.0.1/', lax), NetworkPolicyError);
  });
});
