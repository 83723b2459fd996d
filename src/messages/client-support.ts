import { readFileSync } from 'node:fs';
import { shippedFile } from '../shared/shipped-file.js';

/**
 * Which email clients lack or only partly support an HTML element, CSS property or at-rule:
 * caniemail.com's data, reduced by scripts/client-support-data.ts to the clients the template
 * checks name (config/email-clients/caniemail.json). Shipped with releases, replaceable with
 * `templates.clientSupportData`, read once, never fetched.
 */

type SupportLevel = 'n' | 'a' | 'u';

export interface ClientSupportFeature {
  slug: string;
  title: string;
  url: string;
  /** Only the clients without full support: `gmail.desktop-webmail` -> level and note. */
  support: Record<string, { level: SupportLevel; note?: string }>;
}

export interface ClientSupportData {
  last_update_date: string;
  /** `gmail.desktop-webmail` -> `Gmail (web)`. */
  clients: Record<string, string>;
  features: Map<string, ClientSupportFeature>;
}

class ClientSupportError extends Error {}

function parseClientSupport(text: string): ClientSupportData {
  let raw: { last_update_date?: unknown; clients?: unknown; features?: unknown };
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch {
    throw new ClientSupportError('is not JSON');
  }
  if (!raw.clients || typeof raw.clients !== 'object' || !Array.isArray(raw.features))
    throw new ClientSupportError('needs `clients` and `features` (see config/email-clients/caniemail.json)');
  const features = new Map<string, ClientSupportFeature>();
  for (const f of raw.features as ClientSupportFeature[]) {
    if (typeof f?.slug !== 'string' || typeof f.support !== 'object')
      throw new ClientSupportError('every feature needs `slug` and `support`');
    features.set(f.slug, f);
  }
  return {
    last_update_date: String(raw.last_update_date ?? ''),
    clients: raw.clients as Record<string, string>,
    features,
  };
}

const cache = new Map<string, ClientSupportData>();

/** The data at `path`, or the shipped file when null; read once per process. */
export function loadClientSupport(path: string | null): ClientSupportData {
  const file = path ?? shippedFile('config/email-clients/caniemail.json');
  if (!file) throw new ClientSupportError('config/email-clients/caniemail.json is missing from this installation');
  let data = cache.get(file);
  if (!data) {
    data = parseClientSupport(readFileSync(file, 'utf8'));
    cache.set(file, data);
  }
  return data;
}
