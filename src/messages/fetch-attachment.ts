import type { Config } from '../config/schema.js';
import type { DnsResolver } from '../shared/dns.js';
import { NetworkPolicyError } from '../shared/network-policy.js';
import { safeRequest } from '../shared/safe-request.js';
import type { AttachmentFetcher } from './attachments.js';

/**
 * Fetches attachment URLs at send time under the same network policy as webhooks: public
 * addresses only (unless `attachments.allowPrivateNetworks`), each hop of a redirect checked,
 * the resolved address pinned for the connection, one deadline, a byte cap.
 */
export function createAttachmentFetcher(config: Config, resolver: DnsResolver): AttachmentFetcher {
  const policy = { allowPrivateNetworks: config.attachments.allowPrivateNetworks, resolver };
  return async (url, maxBytes) => {
    let response;
    try {
      response = await safeRequest(url, {
        policy,
        timeoutMs: config.attachments.fetchTimeoutSeconds * 1000,
        maxResponseBytes: maxBytes + 1,
        maxRedirects: 3,
      });
    } catch (err) {
      if (err instanceof NetworkPolicyError) throw err;
      throw new Error(`could not be fetched: ${(err as Error).message}`);
    }
    if (response.status < 200 || response.status >= 300)
      throw new Error(`could not be fetched: the server answered HTTP ${response.status}`);
    if (response.truncated || response.body.length > maxBytes) throw new Error('is larger than 5 MB');
    return response.body;
  };
}
