import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { zipSync } from 'fflate';
import {
  parseDmarcReport,
  parseTlsReport,
  ReportError,
  unpack,
} from '../../../src/receiving/aggregate-reports/parse-aggregate-reports.js';
import { repoPath } from '../../../scripts/repo-root.js';

const fill = (t: string, v: Record<string, string>) => t.replace(/\{\{(\w+)\}\}/g, (_, k: string) => v[k] ?? '');
const dmarc = fill(readFileSync(repoPath('test/fixtures/dmarc-aggregate.xml'), 'utf8'), {
  report_id: 'id-1',
  domain: 'Shop.Example',
  begin: '1700000000',
  end: '1700086399',
});
const tls = fill(readFileSync(repoPath('test/fixtures/tls-report.json'), 'utf8'), {
  report_id: 't-1',
  domain: 'shop.example',
  start: '2026-11-22T00:00:00Z',
  end: '2026-11-22T23:59:59Z',
});

describe('DMARC aggregate reports (RFC 7489 appendix C)', () => {
  it('reads the metadata, the policy and every record', () => {
    const r = parseDmarcReport(Buffer.from(dmarc));
    assert.equal(r.orgName, 'google.com');
    assert.equal(r.reportId, 'id-1');
    assert.equal(r.domain, 'shop.example');
    assert.equal(r.begin, 1700000000_000);
    assert.deepEqual(r.policy, { p: 'none', sp: 'none', pct: 100, adkim: 'r', aspf: 'r' });
    assert.equal(r.records.length, 3);
    assert.deepEqual(r.records[0], {
      sourceIp: '192.0.2.10',
      count: 40,
      disposition: 'none',
      dkim: 'pass',
      spf: 'pass',
      headerFrom: 'shop.example',
      envelopeFrom: null,
      authResults: {
        dkim: [{ domain: 'shop.example', selector: 'abc123', result: 'pass' }],
        spf: [{ domain: 'bounces.shop.example', scope: null, result: 'pass' }],
      },
    });
    assert.deepEqual(r.records[2]!.authResults.dkim, [], 'no DKIM signature at all');
  });
  it('unpacks gzip and zip, and leaves plain XML alone', () => {
    for (const packed of [
      gzipSync(dmarc),
      Buffer.from(zipSync({ 'a.txt': Buffer.from('x'), 'r.xml': Buffer.from(dmarc) })),
      Buffer.from(dmarc),
    ]) {
      assert.equal(parseDmarcReport(unpack(packed, '.xml')).reportId, 'id-1');
    }
  });
  it('refuses what is not a report, with a reason', () => {
    assert.throws(() => parseDmarcReport(Buffer.from('<html/>')), /no <feedback>/);
    assert.throws(
      () => parseDmarcReport(Buffer.from(dmarc.replace(/<report_id>.*<\/report_id>/, ''))),
      /lacks org_name, report_id/,
    );
    assert.throws(() => parseDmarcReport(Buffer.from(dmarc.replace('1700000000', 'yesterday'))), /not a Unix time/);
    assert.throws(() => unpack(Buffer.from(zipSync({ 'a.txt': Buffer.from('x') })), '.xml'), ReportError);
    assert.throws(() => unpack(Buffer.from([0x1f, 0x8b, 1, 2, 3]), '.xml'), /cannot gunzip/);
  });
  it('skips rows without a valid source address', () => {
    const r = parseDmarcReport(
      Buffer.from(dmarc.replace('<source_ip>203.0.113.66</source_ip>', '<source_ip>not-an-ip</source_ip>')),
    );
    assert.equal(r.records.length, 2);
  });
});

describe('TLS reports (RFC 8460 §4)', () => {
  it('reads every policy with its summary and failure details', () => {
    const r = parseTlsReport(unpack(gzipSync(tls), '.json'));
    assert.equal(r.orgName, 'Company-X');
    assert.equal(r.begin, Date.parse('2026-11-22T00:00:00Z'));
    assert.equal(r.policies.length, 2);
    assert.deepEqual(
      { ...r.policies[0]!, failures: r.policies[0]!.failures.length },
      { domain: 'shop.example', policyType: 'sts', successful: 5326, failed: 303, failures: 3 },
    );
    assert.equal(r.policies[0]!.failures[2]!.failure_reason_code, 'X509_V_ERR_PROXY_PATH_LENGTH_EXCEEDED');
    assert.equal(r.policies[1]!.policyType, 'no-policy-found');
  });
  it('refuses JSON that is not a TLS report', () => {
    assert.throws(() => parseTlsReport(Buffer.from('{"a":1}')), /lacks organization-name/);
    assert.throws(() => parseTlsReport(Buffer.from('[1]')), /not a JSON object/);
    assert.throws(() => parseTlsReport(Buffer.from(tls.replace('2026-11-22T00:00:00Z', 'soon'))), /not an RFC 3339/);
  });
});
