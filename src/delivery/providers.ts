/**
 * Mailbox providers by their MX hosts: gmail.com, googlemail.com and every Google Workspace
 * domain are one receiver (the same MX hosts, the same reputation system), and so are the
 * Microsoft, Yahoo/AOL, … families. Delivery limits and back-off apply per provider (and
 * source address), not per recipient domain. A pattern matches an MX host equal to it or ending
 * in `.pattern`; the longest match wins. Documented in docs/deliverability.md (Providers);
 * `delivery.providers` adds to it or replaces entries.
 */
const BUILT_IN_PROVIDERS: Readonly<Record<string, readonly string[]>> = {
  // aspmx.l.google.com, alt1.aspmx.l.google.com, gmail-smtp-in.l.google.com, smtp.google.com
  google: ['google.com', 'googlemail.com'],
  // Outlook.com, Hotmail, Live, MSN: hotmail-com.olc.protection.outlook.com
  microsoft: ['olc.protection.outlook.com'],
  // Microsoft 365 tenants: contoso-com.mail.protection.outlook.com, contoso-com.l-v1.mx.microsoft
  microsoft365: ['mail.protection.outlook.com', 'mx.microsoft'],
  // Yahoo, AOL, Verizon, AT&T: mta5.am0.yahoodns.net
  yahoo: ['yahoodns.net'],
  // iCloud, me.com, mac.com, custom domains on iCloud: mx01.mail.icloud.com
  apple: ['mail.icloud.com'],
  // GMX, Web.de, mail.com (United Internet): mx00.emig.gmx.net, mx-ha03.web.de, mx00.mail.com
  gmx: ['gmx.net', 'gmx.com', 'gmx.de', 'web.de', 'mail.com'],
  // mxs.mail.ru
  mailru: ['mail.ru'],
  // mx.yandex.ru, mx.yandex.net
  yandex: ['yandex.ru', 'yandex.net'],
  // mx.zoho.com, mx.zoho.eu, mx.zoho.in
  zoho: ['zoho.com', 'zoho.eu', 'zoho.in', 'zoho.com.au', 'zoho.jp'],
  // Proofpoint-protected companies: mx0a-00123401.pphosted.com
  proofpoint: ['pphosted.com', 'ppe-hosted.com'],
  // Mimecast-protected companies: us-smtp-inbound-1.mimecast.com
  mimecast: ['mimecast.com', 'mimecast.co.za', 'mimecast-offshore.com'],
  // in1-smtp.messagingengine.com
  fastmail: ['messagingengine.com'],
};

/** The built-in table with `overrides` applied (a name given replaces that provider's patterns; [] removes it). */
export function providerTable(overrides: Record<string, string[]>): Array<{ provider: string; pattern: string }> {
  const merged: Record<string, readonly string[]> = { ...BUILT_IN_PROVIDERS, ...overrides };
  return Object.entries(merged)
    .flatMap(([provider, patterns]) =>
      patterns.map((p) => ({ provider, pattern: p.toLowerCase().replace(/^\*?\.|\.$/g, '') })),
    )
    .sort((a, b) => b.pattern.length - a.pattern.length);
}

/** The provider of an MX host, or null when no pattern matches. */
export function providerOfHost(
  table: ReadonlyArray<{ provider: string; pattern: string }>,
  host: string,
): string | null {
  const h = host.toLowerCase().replace(/\.$/, '');
  return table.find(({ pattern }) => h === pattern || h.endsWith(`.${pattern}`))?.provider ?? null;
}

/**
 * The group a recipient's delivery is limited in: its domain when `delivery.domainLimits`
 * names it (the special case), else the provider of its MX hosts (the first that matches, in
 * order of preference), else its most preferred MX host.
 */
export function groupOf(
  table: ReadonlyArray<{ provider: string; pattern: string }>,
  domain: string,
  mxHosts: ReadonlyArray<{ name: string; priority: number }>,
  ownLimit: boolean,
): { group: string; provider: string | null } {
  if (ownLimit || mxHosts.length === 0) return { group: domain, provider: null };
  const byPreference = [...mxHosts].sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name));
  for (const host of byPreference) {
    const provider = providerOfHost(table, host.name);
    if (provider) return { group: provider, provider };
  }
  // Hosts of equal preference come in random order: the first by name keeps the group stable.
  return { group: byPreference[0]!.name.toLowerCase(), provider: null };
}
