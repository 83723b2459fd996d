import type { Config } from './schema.js';

/** Where DMARC aggregate and TLS reports are received (the rua to publish); null when the inbound listener is off. */
export function reportAddresses(config: Config): { dmarc: string; tls: string } | null {
  if (!config.smtp.inbound.enabled) return null;
  const domain = (config.deliverability.reportDomain ?? config.delivery.hostname).replace(/\.$/, '').toLowerCase();
  return { dmarc: `dmarc@${domain}`, tls: `tls-reports@${domain}` };
}
