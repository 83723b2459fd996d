import { readdirSync, readFileSync } from 'node:fs';
import { ConfigError } from '../../../../config/load-config.js';
import { shippedFile } from '../../../../shared/shipped-file.js';

/**
 * The words of the preference centre, one JSON file per language in config/preferences/
 * (`en.json`, `de.json`, …): a language is added by adding a file. Read once when the HTTP
 * app is built; a key a translation lacks falls back to English.
 */

export const MESSAGE_KEYS = [
  'language',
  'title',
  'intro',
  'topics',
  'topics_hint',
  'no_topics',
  'save',
  'saved',
  'unsubscribe_heading',
  'unsubscribe_text',
  'unsubscribe_button',
  'unsubscribed_title',
  'unsubscribed_text',
  'resubscribe_button',
  'resubscribed',
  'account_note',
  'invalid_title',
  'invalid_text',
  'stale_form',
] as const;
export type MessageKey = (typeof MESSAGE_KEYS)[number];
export type Messages = Record<MessageKey, string>;

export const FALLBACK_LANGUAGE = 'en';

/** Every language of a directory (the shipped one by default), English first among equals. */
export function loadPreferenceMessages(dir = shippedFile('config/preferences')): Map<string, Messages> {
  if (!dir) throw new ConfigError('config/preferences/ is missing from the installation');
  const raw = new Map<string, Partial<Messages>>();
  for (const file of readdirSync(dir)
    .filter((f) => /^[a-z]{2,3}\.json$/.test(f))
    .sort()) {
    try {
      raw.set(file.slice(0, -'.json'.length), JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')) as Partial<Messages>);
    } catch (err) {
      throw new ConfigError(`config/preferences/${file}: ${(err as Error).message}`);
    }
  }
  const english = raw.get(FALLBACK_LANGUAGE);
  if (!english || MESSAGE_KEYS.some((k) => typeof english[k] !== 'string'))
    throw new ConfigError(`config/preferences/${FALLBACK_LANGUAGE}.json must have every message`);
  return new Map([...raw].map(([lang, m]) => [lang, { ...(english as Messages), ...m }]));
}

/**
 * The language of the page: `?lang=`, else the contact's own (a property), else the
 * browser's (Accept-Language, by preference), else English. Only the primary subtag counts
 * (`de-AT` is `de`).
 */
export function chooseLanguage(
  available: ReadonlySet<string>,
  wanted: { query?: string | undefined; contact?: string | null | undefined; acceptLanguage?: string | undefined },
): string {
  const primary = (tag: string) => tag.trim().toLowerCase().split(/[-_]/)[0]!;
  for (const tag of [wanted.query, wanted.contact]) if (tag && available.has(primary(tag))) return primary(tag);
  const ranked = (wanted.acceptLanguage ?? '')
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: primary(tag), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((l) => l.tag !== '' && l.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return ranked.find((l) => available.has(l.tag))?.tag ?? FALLBACK_LANGUAGE;
}

/** A message with `{workspace}` and `{address}` filled in (the caller escapes for HTML). */
export const fill = (text: string, values: Record<string, string>): string =>
  text.replace(/\{(\w+)\}/g, (whole, key: string) => values[key] ?? whole);
