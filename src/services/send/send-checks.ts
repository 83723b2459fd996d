import { AppError, validationError } from '../../shared/errors.js';
import { listDomains, type Domain } from '../../store/domains.js';
import { findIpPool } from '../../store/ip-pools.js';
import type { Workspace } from '../../store/workspaces.js';
import type { ServiceDeps } from '../deps.js';
import type { TemplateService } from '../templates.js';
import { hasLineBreak, type Address } from '../../messages/addresses.js';
import { domainOf } from '../../shared/domain-name.js';
import type { AttachmentFetcher } from '../../messages/attachments.js';
import type { MessageLinks } from '../../messages/links.js';
import type { Enqueue } from './enqueue.js';

/** Most recipients (to + cc + bcc) of one message, as Resend allows. */
export const MAX_RECIPIENTS = 50;
const MAX_TAGS = 20;
/** How far ahead a message may be scheduled. */
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;

/** Headers a caller may not set: mailsvc writes them, or they would change who the mail is from or to. */
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
  'sender',
  'reply-to',
  'return-path',
  'received',
  'dkim-signature',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'authentication-results',
]);
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,75}$/;

export interface SendServiceDeps extends ServiceDeps {
  templates: TemplateService;
  /** The one door into the queue. */
  enqueue: Enqueue;
  fetchAttachment: AttachmentFetcher | null;
  links: MessageLinks;
}

/** One queue item per recipient: the same address in to and bcc is sent once (local parts keep their case). */
export const dedupe = (list: Address[]): string[] => {
  const seen = new Map<string, string>();
  for (const a of list) if (!seen.has(a.address.toLowerCase())) seen.set(a.address.toLowerCase(), a.address);
  return [...seen.values()];
};

export function checkHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name)) throw validationError(`headers.${name}`, 'is not a valid header name');
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      throw validationError(`headers.${name}`, 'is set by mailsvc and cannot be overridden');
    if (typeof value !== 'string' || hasLineBreak(value) || value.length > 998)
      throw validationError(`headers.${name}`, 'must be one line of at most 998 characters');
    out[name] = value;
  }
  return out;
}

export function checkTags(tags: string[] | undefined): string[] {
  if (!tags) return [];
  if (tags.length > MAX_TAGS) throw validationError('tags', `at most ${MAX_TAGS} tags`);
  tags.forEach((t, i) => {
    if (t.length === 0 || t.length > 256 || /[\u0000-\u001f]/.test(t))
      throw validationError(`tags[${i}]`, 'must be 1 to 256 printable characters');
  });
  return tags;
}

/** A time already past means now (null); more than 30 days ahead is refused. */
export function checkScheduledAt(scheduledAt: number | null | undefined, now: number): number | null {
  if (scheduledAt == null || scheduledAt <= now) return null;
  if (scheduledAt > now + MAX_SCHEDULE_MS) throw validationError('scheduled_at', 'must be within 30 days');
  return scheduledAt;
}

/** The workspace domain a From address may use: verified, or merely added for test keys. */
export async function sendingDomain(
  deps: Pick<ServiceDeps, 'db' | 'rows'>,
  workspace: Workspace,
  from: Address,
  test: boolean,
  field: string,
  only?: string | null,
): Promise<Domain> {
  const domain = domainOf(from.address);
  const match = (await deps.rows.read('domains', workspace.id, () => listDomains(deps.db, workspace.id))).find(
    (d) => d.name === domain,
  );
  if (match && only && match.id !== only)
    throw new AppError('forbidden', `${field}: this API key may send only from one domain, not ${domain}`, { field });
  if (match && (match.status === 'verified' || test)) return match;
  throw new AppError('forbidden', `${field}: ${domain} is not a verified domain of this workspace`, { field });
}

/** The pool a request names, by name or id: a 400 on the field when there is none. */
export async function poolOf(
  deps: Pick<ServiceDeps, 'db'>,
  field: string,
  name: string | undefined,
): Promise<string | null> {
  if (name === undefined) return null;
  const pool = await findIpPool(deps.db, name);
  if (!pool) throw validationError(field, `no IP pool named ${JSON.stringify(name)} (GET /v1/ip-pools)`);
  return pool.id;
}

export async function defaultSender(deps: Pick<ServiceDeps, 'db'>, workspace: Workspace): Promise<Address> {
  if (workspace.default_from_email) return { name: '', address: workspace.default_from_email };
  const verified = (await listDomains(deps.db, workspace.id)).find((d) => d.status === 'verified');
  if (!verified)
    throw new AppError('forbidden', 'from_email: is required: this workspace has no verified domain to send from', {
      field: 'from_email',
    });
  return { name: '', address: `noreply@${verified.name}` };
}
