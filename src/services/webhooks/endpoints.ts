import { randomBytes } from 'node:crypto';
import { EVENT_TYPES } from '../../events/event-types.js';
import { ALL_EVENTS, isEventType } from '../../events/subscriptions.js';
import { encryptSecret } from '../../shared/crypto.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { checkUrl, NetworkPolicyError } from '../../shared/network-policy.js';
import {
  countWebhookEndpoints,
  failPendingWebhookDeliveries,
  findWebhookEndpoint,
  findWebhookEndpointByUrl,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  saveWebhookEndpoint,
  updateWebhookEndpoint,
  type WebhookEndpoint,
} from '../../store/webhooks.js';
import type { ServiceDeps } from '../deps.js';
import { SECRET_PREFIX, webhookView } from './webhook-views.js';
import type { WebhookService } from './webhook-service.js';

/** Endpoints: who gets which events at which URL, signed with which secret. */

const SECRET_BYTES = 32;
const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
const HINT_CHARS = 4;
const LEGACY_SECRET_RE = /^whsec_[\x21-\x7e]{16,256}$/;
const MAX_DESCRIPTION = 500;

const generateSecret = (): string => SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');

/** Resend's event types with no counterpart here (yet): refused with a message that says so. */
const RESEND_ONLY_EVENTS = new Set([
  'email.scheduled',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'contact.topics.updated',
  'domain.created',
  'domain.deleted',
  'suppression.added',
  'suppression.removed',
  'topic.created',
  'topic.updated',
  'topic.deleted',
]);

/** Validates an event list: known types or `*`, at least one; duplicates dropped. */
export function parseEvents(events: unknown): string[] {
  if (!Array.isArray(events) || events.length === 0) {
    throw validationError(
      'events',
      `must name at least one event type, or "*" for all; known: ${EVENT_TYPES.join(', ')}`,
    );
  }
  events.forEach((e, i) => {
    if (typeof e === 'string' && (e === ALL_EVENTS || isEventType(e))) return;
    if (typeof e === 'string' && RESEND_ONLY_EVENTS.has(e)) {
      throw validationError(
        `events[${i}]`,
        `${e} is a Resend event type that mailsvc does not emit; known: ${EVENT_TYPES.join(', ')}, or "*"`,
      );
    }
    throw validationError(
      `events[${i}]`,
      `unknown event type ${JSON.stringify(e)}; known: ${EVENT_TYPES.join(', ')}, or "*"`,
    );
  });
  const unique = [...new Set(events as string[])];
  return unique.includes(ALL_EVENTS) ? [ALL_EVENTS] : unique;
}

/** The endpoint of a workspace an id names, or not found. */
export const endpointFinder =
  (deps: ServiceDeps) =>
  async (workspaceId: string, id: string): Promise<WebhookEndpoint> => {
    const found = isUuid(id) ? await findWebhookEndpoint(deps.db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Webhook ${id}`);
    return found;
  };

type EndpointUseCases = Pick<WebhookService, 'register' | 'list' | 'get' | 'update' | 'remove' | 'rotateSecret'>;

export function endpointUseCases(deps: ServiceDeps): EndpointUseCases {
  const { db, clock, config, resolver, secretKey } = deps;
  const policy = { allowPrivateNetworks: config.webhooks.allowPrivateNetworks, resolver };
  const requireEndpoint = endpointFinder(deps);

  const checkedUrl = async (url: string): Promise<string> => {
    try {
      return (await checkUrl(url.trim(), policy)).href;
    } catch (err) {
      if (err instanceof NetworkPolicyError) {
        // The usual first try is an endpoint on the same machine; say which setting allows it.
        const hint =
          !policy.allowPrivateNetworks && /https:\/\/|private/.test(err.message)
            ? ' (for an endpoint on this machine or a private network, when testing, set webhooks.allowPrivateNetworks: MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true)'
            : '';
        throw validationError('url', `${err.message}${hint}`);
      }
      throw err;
    }
  };

  const description = (value: string | null | undefined): string | null => {
    if (value === undefined || value === null) return null;
    if (value.length > MAX_DESCRIPTION)
      throw validationError('description', `must be at most ${MAX_DESCRIPTION} characters`);
    return value;
  };

  const refuseDuplicate = async (workspaceId: string, url: string, self?: string): Promise<void> => {
    const existing = await findWebhookEndpointByUrl(db, workspaceId, url);
    if (existing && existing.id !== self)
      throw new AppError('already_exists', `A webhook for ${url} exists already (${existing.id})`);
  };

  return {
    async register(workspaceId, surface, input) {
      const events = parseEvents(input.events);
      let secret: string;
      if (surface === 'legacy') {
        if (typeof input.secret !== 'string' || !LEGACY_SECRET_RE.test(input.secret)) {
          throw validationError('secret', 'must start with whsec_ followed by 16 to 256 visible ASCII characters');
        }
        secret = input.secret;
      } else {
        secret = generateSecret();
      }
      const url = await checkedUrl(input.url);
      await refuseDuplicate(workspaceId, url);
      const now = clock.now();
      const row: WebhookEndpoint = {
        id: newId(),
        workspace_id: workspaceId,
        surface,
        url,
        events,
        description: description(input.description),
        secret_sealed: encryptSecret(secretKey, secret),
        secret_hint: secret.slice(-HINT_CHARS),
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        status: 'enabled',
        disabled_reason: null,
        disabled_at: null,
        failing_since: null,
        last_success_at: null,
        last_failure_at: null,
        created_at: now,
        updated_at: now,
      };
      await saveWebhookEndpoint(db, row);
      return { webhook: webhookView(row, now), secret };
    },

    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([
        listWebhookEndpoints(db, workspaceId, page),
        countWebhookEndpoints(db, workspaceId),
      ]);
      const now = clock.now();
      return { items: rows.map((r) => webhookView(r, now)), total, more };
    },

    get: async (workspaceId, id) => webhookView(await requireEndpoint(workspaceId, id), clock.now()),

    async update(workspaceId, id, input) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const now = clock.now();
      const changes: Partial<WebhookEndpoint> = { updated_at: now };
      if (input.url !== undefined) {
        changes.url = await checkedUrl(input.url);
        await refuseDuplicate(workspaceId, changes.url, endpoint.id);
      }
      if (input.events !== undefined) changes.events = parseEvents(input.events);
      if (input.description !== undefined) changes.description = description(input.description);
      const disabling = input.status === 'disabled' && endpoint.status !== 'disabled';
      if (disabling) Object.assign(changes, { status: 'disabled', disabled_reason: 'manual', disabled_at: now });
      if (input.status === 'enabled' && endpoint.status !== 'enabled') {
        // A fresh start: the failure streak that may have disabled it is forgotten.
        Object.assign(changes, { status: 'enabled', disabled_reason: null, disabled_at: null, failing_since: null });
      }
      await db.transaction().execute(async (trx) => {
        await updateWebhookEndpoint(trx, endpoint.id, changes);
        if (disabling) await failPendingWebhookDeliveries(trx, endpoint.id, now, 'endpoint disabled');
      });
      return webhookView((await findWebhookEndpoint(db, workspaceId, endpoint.id))!, now);
    },

    async remove(workspaceId, id) {
      const endpoint = await requireEndpoint(workspaceId, id);
      await removeWebhookEndpoint(db, workspaceId, endpoint.id);
    },

    async rotateSecret(workspaceId, id) {
      const endpoint = await requireEndpoint(workspaceId, id);
      const now = clock.now();
      const secret = generateSecret();
      await updateWebhookEndpoint(db, endpoint.id, {
        secret_sealed: encryptSecret(secretKey, secret),
        secret_hint: secret.slice(-HINT_CHARS),
        // The secret being replaced stays valid for a day; one rotated out earlier is dropped.
        previous_secret_sealed: endpoint.secret_sealed,
        previous_secret_expires_at: now + ROTATION_OVERLAP_MS,
        updated_at: now,
      });
      return { webhook: webhookView((await findWebhookEndpoint(db, workspaceId, endpoint.id))!, now), secret };
    },
  };
}
