import type { Services } from '../../src/services/index.js';
import type { TestDns } from './dns-server.js';
import type { TestServer } from './server.js';

/**
 * Adds a domain and makes it verified the real way: its CNAMEs and DKIM keys are published in
 * the test DNS server (which the server under test must use) and `verify` is run.
 */
export async function addVerifiedDomain(
  server: TestServer,
  dns: TestDns,
  name: string,
  workspaceId = server.workspaceId,
) {
  return verifyDomainWith(server.runtime.services.domains, dns, name, workspaceId);
}

/** The same through the domains service of a runtime the test opened itself (servers in child processes). */
export async function verifyDomainWith(domains: Services['domains'], dns: TestDns, name: string, workspaceId: string) {
  await domains.add(workspaceId, { domain: name });
  const records = await domains.recordsToPublish(workspaceId, name);
  for (const r of records.customer) dns.set(r.name, 'CNAME', [r.value]);
  for (const r of records.dkimHost) dns.set(r.name, 'TXT', [r.value]);
  const result = await domains.verify(workspaceId, name);
  if (result.domain.status !== 'verified')
    throw new Error(`could not verify ${name}: ${result.domain.last_check_error}`);
  return result.domain;
}
