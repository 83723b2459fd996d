import { toIso } from '../shared/clock.js';
import { normalizeDomain } from '../shared/domain-name.js';
import { notFound, validationError } from '../shared/errors.js';
import {
  countSuppressions,
  findSuppression,
  listSuppressions,
  removeSuppression,
  saveSuppression,
  saveSuppressionIfAbsent,
  type Suppression,
  type SuppressionReason,
  type SuppressionScope,
} from '../store/suppressions.js';
import type { ListPage, Listed } from '../store/infra/list-page.js';
import type { ServiceDeps } from './deps.js';

/**
 * The workspace suppression list. Mail to a listed address (or to any address of a listed
 * `@domain`) is never sent: the delivery engine marks it `suppressed` and emits
 * `email.suppressed`. Hard bounces add addresses on their own; people add and remove them here.
 */

export type { SuppressionReason };
export const SUPPRESSION_REASONS = [
  'hard_bounce',
  'complaint',
  'unsubscribe',
  'manual',
] as const satisfies readonly SuppressionReason[];
export const SUPPRESSION_SCOPES = ['all', 'marketing'] as const satisfies readonly SuppressionScope[];

export interface SuppressionView {
  /** The address, or `@domain` for a whole domain. */
  email: string;
  type: 'address' | 'domain';
  reason: SuppressionReason;
  /** `all`: no mail at all; `marketing`: transactional mail still goes (unsubscribes). */
  scope: SuppressionScope;
  detail: string | null;
  /** The email whose bounce or complaint added it. */
  email_id: string | null;
  created_at: string;
}

interface AddSuppressionInput {
  email?: string | undefined;
  domain?: string | undefined;
  reason?: SuppressionReason | undefined;
  scope?: SuppressionScope | undefined;
  detail?: string | undefined;
}

interface ImportResult {
  added: number;
  alreadyListed: number;
  invalid: Array<{ line: number; value: string; error: string }>;
}

export interface SuppressionService {
  /** `reasons`: only entries added for these reasons. */
  list(workspaceId: string, page: ListPage, reasons?: readonly SuppressionReason[]): Promise<Listed<SuppressionView>>;
  get(workspaceId: string, emailOrDomain: string): Promise<SuppressionView>;
  /** Adds or updates an entry. */
  add(workspaceId: string, input: AddSuppressionInput): Promise<SuppressionView>;
  remove(workspaceId: string, emailOrDomain: string): Promise<SuppressionView>;
  /** Adds manual entries for many addresses at once: all valid, or none is added. */
  addMany(workspaceId: string, emails: string[]): Promise<SuppressionView[]>;
  /** Removes many entries at once; reports which were listed. */
  removeMany(workspaceId: string, emails: string[]): Promise<Array<{ email: string; deleted: boolean }>>;
  /** One address or `@domain` per line (CSV: the first column); existing entries are kept. */
  /** `onProgress` hears of each written chunk: entries written so far, of all valid entries. */
  importLines(
    workspaceId: string,
    lines: string[],
    options?: {
      reason?: SuppressionReason;
      scope?: SuppressionScope;
      onProgress?: (written: number, total: number) => void;
    },
  ): Promise<ImportResult>;
}

const MAX_ADDRESS = 254;
/** Most addresses in one batch request. */
const MAX_BATCH = 1000;
const LOCAL_RE = /^[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]{1,64}$/;

/**
 * A list key: a lower-cased address (domain in ASCII), or `@domain`. Throws a validation
 * error naming `field` otherwise. A value without `@` is a domain.
 */
export function suppressionKey(value: string, field = 'email'): string {
  const v = value.trim();
  if (v === '') throw validationError(field, 'must not be empty');
  const at = v.lastIndexOf('@');
  if (at <= 0) {
    const domain = normalizeDomain(at === 0 ? v.slice(1) : v);
    if (!domain) throw validationError(field, `"${value}" is neither an email address nor a domain`);
    return `@${domain}`;
  }
  const local = v.slice(0, at);
  const domain = normalizeDomain(v.slice(at + 1));
  if (!domain || !LOCAL_RE.test(local) || v.length > MAX_ADDRESS)
    throw validationError(field, `"${value}" is not a valid email address`);
  return `${local.toLowerCase()}@${domain}`;
}

const suppressionView = (s: Suppression): SuppressionView => ({
  email: s.address,
  type: s.address.startsWith('@') ? 'domain' : 'address',
  reason: s.reason,
  scope: s.scope,
  detail: s.detail,
  email_id: s.email_id,
  created_at: toIso(s.created_at),
});

/** First column of a CSV or plain list line; null for blanks, comments and a header. */
function valueOfLine(line: string): string | null {
  const cell = line
    .split(/[,;\t]/)[0]!
    .trim()
    .replace(/^"(.*)"$/, '$1')
    .trim();
  if (cell === '' || cell.startsWith('#') || /^(e-?mail|address|email_address)$/i.test(cell)) return null;
  return cell;
}

export function createSuppressionService(deps: ServiceDeps): SuppressionService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, value: string): Promise<Suppression> => {
    const key = suppressionKey(value);
    const found = await findSuppression(db, workspaceId, key);
    if (!found) throw notFound(`Suppression ${key}`);
    return found;
  };

  return {
    async list(workspaceId, page, reasons) {
      const [{ rows, more }, total] = await Promise.all([
        listSuppressions(db, { workspaceId, reasons }, page),
        countSuppressions(db, workspaceId, reasons),
      ]);
      return { items: rows.map(suppressionView), total, more };
    },

    get: async (workspaceId, value) => suppressionView(await find(workspaceId, value)),

    async add(workspaceId, input) {
      if ((input.email === undefined) === (input.domain === undefined)) {
        throw validationError(input.email === undefined ? 'email' : 'domain', 'give either email or domain, not both');
      }
      const address =
        input.email !== undefined
          ? suppressionKey(input.email, 'email')
          : `@${
              normalizeDomain(input.domain!) ??
              (() => {
                throw validationError('domain', `"${input.domain}" is not a valid domain name`);
              })()
            }`;
      if (input.email !== undefined && address.startsWith('@'))
        throw validationError('email', `"${input.email}" is not an email address (use domain for a whole domain)`);
      const reason = input.reason ?? 'manual';
      const row: Suppression = {
        workspace_id: workspaceId,
        address,
        // An unsubscribe stops marketing only, unless told otherwise.
        scope: input.scope ?? (reason === 'unsubscribe' ? 'marketing' : 'all'),
        reason,
        detail: input.detail ?? null,
        email_id: null,
        created_at: clock.now(),
      };
      await saveSuppression(db, row);
      return suppressionView(row);
    },

    async remove(workspaceId, value) {
      const found = await find(workspaceId, value);
      await removeSuppression(db, workspaceId, found.address);
      return suppressionView(found);
    },

    async addMany(workspaceId, emails) {
      if (emails.length === 0 || emails.length > MAX_BATCH)
        throw validationError('emails', `must list 1 to ${MAX_BATCH} addresses`);
      const keys = [...new Set(emails.map((e, i) => suppressionKey(e, `emails[${i}]`)))];
      const now = clock.now();
      const rows = keys.map((address): Suppression => ({
        workspace_id: workspaceId,
        address,
        scope: 'all',
        reason: 'manual',
        detail: null,
        email_id: null,
        created_at: now,
      }));
      await db.transaction().execute(async (trx) => {
        for (const row of rows) await saveSuppression(trx, row);
      });
      return rows.map(suppressionView);
    },

    async removeMany(workspaceId, emails) {
      if (emails.length === 0 || emails.length > MAX_BATCH)
        throw validationError('emails', `must list 1 to ${MAX_BATCH} addresses`);
      const keys = emails.map((e, i) => suppressionKey(e, `emails[${i}]`));
      return db.transaction().execute(async (trx) => {
        const out: Array<{ email: string; deleted: boolean }> = [];
        for (const address of keys)
          out.push({ email: address, deleted: await removeSuppression(trx, workspaceId, address) });
        return out;
      });
    },

    async importLines(workspaceId, lines, options = {}) {
      const result: ImportResult = { added: 0, alreadyListed: 0, invalid: [] };
      const rows: Suppression[] = [];
      const seen = new Set<string>();
      const reason = options.reason ?? 'manual';
      const now = clock.now();
      lines.forEach((line, index) => {
        const value = valueOfLine(line);
        if (value === null) return;
        try {
          const address = suppressionKey(value);
          if (seen.has(address)) return;
          seen.add(address);
          rows.push({
            workspace_id: workspaceId,
            address,
            scope: options.scope ?? (reason === 'unsubscribe' ? 'marketing' : 'all'),
            reason,
            detail: 'imported',
            email_id: null,
            created_at: now,
          });
        } catch (err) {
          result.invalid.push({ line: index + 1, value, error: (err as Error).message });
        }
      });
      for (let i = 0; i < rows.length; i += 500) {
        const chunk = rows.slice(i, i + 500);
        await db.transaction().execute(async (trx) => {
          const before = await countSuppressions(trx, workspaceId);
          for (const row of chunk) await saveSuppressionIfAbsent(trx, row);
          const added = (await countSuppressions(trx, workspaceId)) - before;
          result.added += added;
          result.alreadyListed += chunk.length - added;
        });
        options.onProgress?.(i + chunk.length, rows.length);
      }
      return result;
    },
  };
}
