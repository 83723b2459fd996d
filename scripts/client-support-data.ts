// Rebuilds config/email-clients/caniemail.json from caniemail.com's published data (its
// api.json, https://www.caniemail.com/api/data.json): `node --import tsx scripts/client-support-data.ts api.json`.
// Only the clients the template checks name are kept, each at its latest tested version, and
// only where support is not full: the file stays small and is read at start, never fetched.
import { readFileSync, writeFileSync } from 'node:fs';

interface CanIEmail {
  api_version: string;
  last_update_date: string;
  data: Array<{
    slug: string;
    title: string;
    url: string;
    category: string;
    keywords: string | null;
    stats: Record<string, Record<string, Record<string, string>>>;
    notes_by_num: Record<string, string> | null;
  }>;
}

/** The clients the checks report on: family.platform -> the name people know. */
export const CLIENTS: Record<string, string> = {
  'gmail.desktop-webmail': 'Gmail (web)',
  'gmail.ios': 'Gmail (iOS app)',
  'gmail.android': 'Gmail (Android app)',
  'outlook.windows': 'Outlook (Windows)',
  'outlook.windows-mail': 'Windows Mail',
  'outlook.macos': 'Outlook (macOS)',
  'outlook.outlook-com': 'Outlook.com',
  'outlook.ios': 'Outlook (iOS)',
  'outlook.android': 'Outlook (Android)',
  'apple-mail.macos': 'Apple Mail (macOS)',
  'apple-mail.ios': 'Apple Mail (iOS)',
  'yahoo.desktop-webmail': 'Yahoo Mail (web)',
  'yahoo.ios': 'Yahoo Mail (iOS)',
  'yahoo.android': 'Yahoo Mail (Android)',
  'samsung-email.android': 'Samsung Email',
};

const source = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as CanIEmail;
const features = source.data
  .filter((f) => f.category === 'css' || f.category === 'html')
  .map((f) => {
    const support: Record<string, { level: string; note?: string }> = {};
    for (const client of Object.keys(CLIENTS)) {
      const [family, platform] = client.split('.') as [string, string];
      const versions = f.stats[family]?.[platform];
      if (!versions) continue;
      const latest = Object.values(versions).at(-1)!;
      const [level, ...marks] = latest.split(' ');
      if (level === 'y') continue;
      const notes = marks.map((m) => f.notes_by_num?.[m.replace('#', '')]).filter((n): n is string => Boolean(n));
      support[client] = { level: level!, ...(notes.length ? { note: notes.join(' ') } : {}) };
    }
    return { slug: f.slug, title: f.title, url: f.url, support };
  })
  .filter((f) => Object.keys(f.support).length > 0);

writeFileSync(
  'config/email-clients/caniemail.json',
  JSON.stringify(
    {
      source: 'caniemail.com (https://www.caniemail.com), data by Rémi Parmentier and contributors',
      api_version: source.api_version,
      last_update_date: source.last_update_date,
      levels: { n: 'not supported', a: 'partly supported', u: 'support unknown' },
      clients: CLIENTS,
      features,
    },
    null,
    1,
  ) + '\n',
);
