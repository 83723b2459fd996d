import { createHash } from 'node:crypto';
import { recordEvent } from '../../events/record-event.js';
import { AppError, validationError } from '../../shared/errors.js';
import { signToken, tokenKey, verifyToken } from '../../shared/signed-token.js';
import {
  findSubscriberByEmail,
  updateSubscriber,
  type Subscriber,
  type SubscriberStatus,
} from '../../store/subscribers.js';
import { saveSubscriptions } from '../../store/topics.js';
import { findWorkspace } from '../../store/workspaces.js';
import type { MessageLinks } from '../../messages/links.js';
import type { ServiceDeps } from '../deps.js';
import { subscriberEventData } from './subscriber-rows.js';
import type { SubscriberService } from './subscribers.js';
import type { TopicChoiceView, TopicService } from './topics.js';

/**
 * The preference centre behind the link every marketing message carries (`/u/<token>`): the
 * contact's topics with their state, changed by a form, and a way back in after leaving. The
 * signed token in the link is the only credential (as for the one-click unsubscribe,
 * services/unsubscribe.ts); a form post must also carry a form token made for that link by the
 * page, so that nothing but this page, served from here, changes a choice.
 */

export interface PreferenceState {
  workspace: { name: string; logoUrl: string | null };
  address: string;
  /** null: the address is no contact of the workspace: it can only unsubscribe. */
  contact: {
    status: SubscriberStatus;
    /** The contact's own language (its `language` or `locale` property), if it has one. */
    language: string | null;
    topics: TopicChoiceView[];
  } | null;
  /** Goes back with a form post: proves it came from this page. */
  formToken: string;
}

export interface PreferenceService {
  /** What the page shows; a token that is not ours is a validation error. */
  show(token: string): Promise<PreferenceState>;
  /** The topics in `optedIn` are the contact's, every other topic of the workspace is left; emits subscriber.updated with the topics. */
  save(token: string, formToken: string, optedIn: readonly string[]): Promise<PreferenceState>;
  /** An unsubscribed contact comes back (subscriber.updated; the opt-out suppression is lifted). */
  resubscribe(token: string, formToken: string): Promise<PreferenceState>;
}

/** The form a page served for a link stays good this long: a day to make up one's mind. */
const FORM_TTL_MS = 24 * 3600_000;

export function createPreferenceService(
  deps: ServiceDeps & { links: MessageLinks; subscribers: SubscriberService; topics: TopicService },
): PreferenceService {
  const { db, clock, links, subscribers, topics } = deps;
  const formKey = tokenKey(deps.secretKey, 'preference form');
  const linkHash = (token: string) => createHash('sha256').update(token).digest('base64url').slice(0, 22);

  const read = (token: string) => {
    const payload = links.readUnsubscribe(token);
    if (!payload) throw validationError('token', 'this link is not valid');
    return payload;
  };

  const checkForm = (token: string, formToken: string) => {
    const form = verifyToken<{ l: string; t: number }>(formKey, formToken);
    const now = clock.now();
    if (
      !form ||
      form.l !== linkHash(token) ||
      typeof form.t !== 'number' ||
      form.t > now ||
      now - form.t > FORM_TTL_MS
    ) {
      throw new AppError('validation_error', 'form: this page is out of date; open it again', { field: 'form' });
    }
  };

  async function show(token: string): Promise<PreferenceState> {
    const { workspaceId, address } = read(token);
    const workspace = await findWorkspace(db, workspaceId);
    if (!workspace) throw validationError('token', 'this link is not valid');
    const subscriber = await findSubscriberByEmail(db, workspaceId, address);
    return {
      workspace: { name: workspace.name, logoUrl: workspace.logo_url },
      address: subscriber?.email ?? address,
      contact: subscriber
        ? {
            status: subscriber.status,
            language: languageOf(subscriber),
            topics: await topics.choicesOf(workspaceId, subscriber.id),
          }
        : null,
      formToken: signToken(formKey, { l: linkHash(token), t: clock.now() }),
    };
  }

  /** The contact the link names, once the form is known to come from its page. */
  const contactOf = async (token: string, formToken: string): Promise<Subscriber> => {
    const { workspaceId, address } = read(token);
    checkForm(token, formToken);
    const subscriber = await findSubscriberByEmail(db, workspaceId, address);
    if (!subscriber) throw validationError('token', 'this address is not a contact: there is nothing to choose');
    return subscriber;
  };

  return {
    show,

    async save(token, formToken, optedIn) {
      const subscriber = await contactOf(token, formToken);
      const all = await topics.choicesOf(subscriber.workspace_id, subscriber.id);
      const wanted = new Set(optedIn);
      const choices = all.map((t) => ({
        topicId: t.id,
        subscription: wanted.has(t.id) ? ('opt_in' as const) : ('opt_out' as const),
      }));
      // Only what the contact changed is written and reported.
      const changed = choices.filter((c) => all.find((t) => t.id === c.topicId)!.subscription !== c.subscription);
      if (changed.length > 0) {
        await db.transaction().execute(async (trx) => {
          const now = clock.now();
          await saveSubscriptions(trx, subscriber.id, changed, now);
          await updateSubscriber(trx, subscriber.id, { updated_at: now });
          const data = await subscriberEventData(trx, { ...subscriber, updated_at: now });
          const byId = new Map(choices.map((c) => [c.topicId, c.subscription]));
          await recordEvent(trx, {
            workspaceId: subscriber.workspace_id,
            type: 'subscriber.updated',
            at: now,
            data: {
              ...data,
              topics: all.map((t) => ({ id: t.id, name: t.name, subscription: byId.get(t.id) })),
              via: 'preference_centre',
            },
          });
        });
      }
      return show(token);
    },

    async resubscribe(token, formToken) {
      const subscriber = await contactOf(token, formToken);
      if (subscriber.status !== 'subscribed')
        await subscribers.update(subscriber.workspace_id, subscriber.id, { status: 'subscribed' });
      return show(token);
    },
  };
}

/** A contact's language from its properties (`language` or `locale`: `de`, `fr-CA`, `es_MX`). */
function languageOf(s: Subscriber): string | null {
  if (s.metadata === null) return null;
  const value = s.metadata.language ?? s.metadata.locale;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}
