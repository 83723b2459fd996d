import { toIso } from '../../shared/clock.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { Db } from '../../store/infra/db.js';
import { findSubscriber } from '../../store/subscribers.js';
import {
  countOpenCampaignsOf,
  findTopic,
  listSubscriptionsOf,
  listTopics,
  removeTopic,
  saveSubscriptions,
  saveTopic,
  updateTopic,
  type Topic,
  type TopicSubscription,
} from '../../store/topics.js';
import type { ServiceDeps } from '../deps.js';
import { hasLineBreak } from '../../messages/addresses.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * Topics: what a subscriber may opt in to or out of without leaving the list altogether
 * (Resend's topics). A broadcast naming a topic goes to the subscribers of its audience who
 * are in: opted in, or never asked when the topic's default is opt_in. Unsubscribing (the
 * one-click link) still stops every broadcast.
 */

export const TOPIC_SUBSCRIPTIONS = ['opt_in', 'opt_out'] as const satisfies readonly TopicSubscription[];

interface TopicView {
  object: 'topic';
  id: string;
  name: string;
  description: string | null;
  default_subscription: TopicSubscription;
  created_at: string;
  updated_at: string;
}

/** A subscriber's standing on one topic: its own choice, or the topic's default. */
export interface TopicChoiceView {
  id: string;
  name: string;
  description: string | null;
  subscription: TopicSubscription;
}

interface TopicInput {
  name: string;
  description?: string | null | undefined;
  default_subscription: TopicSubscription;
}

export interface TopicService {
  create(workspaceId: string, input: TopicInput): Promise<TopicView>;
  list(workspaceId: string): Promise<TopicView[]>;
  get(workspaceId: string, id: string): Promise<TopicView>;
  update(
    workspaceId: string,
    id: string,
    changes: { name?: string | undefined; description?: string | null | undefined },
  ): Promise<TopicView>;
  remove(workspaceId: string, id: string): Promise<TopicView>;
  /** Throws a validation error naming `field` unless the topic exists. */
  check(workspaceId: string, id: string, field: string): Promise<void>;
  /** Every topic of the workspace, with the subscriber's standing on it. */
  choicesOf(workspaceId: string, subscriberId: string): Promise<TopicChoiceView[]>;
  /** Records choices (in the caller's transaction when given). */
  choose(
    workspaceId: string,
    subscriberId: string,
    choices: Array<{ id: string; subscription: TopicSubscription }>,
    trx?: Db,
  ): Promise<void>;
}

const topicView = (t: Topic): TopicView => ({
  object: 'topic',
  id: t.id,
  name: t.name,
  description: t.description,
  default_subscription: t.default_subscription,
  created_at: toIso(t.created_at),
  updated_at: toIso(t.updated_at),
});

const checkName = (name: string) => {
  if (name.trim() === '' || name.length > 50 || hasLineBreak(name))
    throw validationError('name', 'must be one line of 1 to 50 characters');
  return name.trim();
};
const checkDescription = (description: string | null | undefined) => {
  if (description != null && description.length > 200)
    throw validationError('description', 'must be at most 200 characters');
  return description ?? null;
};

export function createTopicService(deps: ServiceDeps): TopicService {
  const { db, clock } = deps;
  const find = async (workspaceId: string, id: string): Promise<Topic> => {
    const found = isUuid(id) ? await findTopic(db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Topic ${id}`);
    return found;
  };
  return {
    async create(workspaceId, input) {
      if (!isOneOf(TOPIC_SUBSCRIPTIONS, input.default_subscription))
        throw validationError('default_subscription', 'must be opt_in or opt_out');
      const now = clock.now();
      const row: Topic = {
        id: newId(),
        workspace_id: workspaceId,
        name: checkName(input.name),
        description: checkDescription(input.description),
        default_subscription: input.default_subscription,
        created_at: now,
        updated_at: now,
      };
      await saveTopic(db, row);
      return topicView(row);
    },
    list: async (workspaceId) => (await listTopics(db, workspaceId)).map(topicView),
    get: async (workspaceId, id) => topicView(await find(workspaceId, id)),
    async update(workspaceId, id, changes) {
      const topic = await find(workspaceId, id);
      await updateTopic(db, topic.id, {
        ...(changes.name !== undefined ? { name: checkName(changes.name) } : {}),
        ...(changes.description !== undefined ? { description: checkDescription(changes.description) } : {}),
        updated_at: clock.now(),
      });
      return topicView(await find(workspaceId, topic.id));
    },
    async remove(workspaceId, id) {
      const topic = await find(workspaceId, id);
      const open = await countOpenCampaignsOf(db, topic.id);
      if (open > 0)
        throw new AppError(
          'invalid_state',
          `Topic ${topic.id} is named by ${open} broadcast${open === 1 ? '' : 's'} not yet sent; delete or change ${open === 1 ? 'it' : 'them'} first`,
        );
      await removeTopic(db, workspaceId, topic.id);
      return topicView(topic);
    },
    async check(workspaceId, id, field) {
      if (!(isUuid(id) && (await findTopic(db, workspaceId, id))))
        throw validationError(field, `topic ${id} not found`);
    },
    async choicesOf(workspaceId, subscriberId) {
      const [topics, own] = await Promise.all([listTopics(db, workspaceId), listSubscriptionsOf(db, subscriberId)]);
      const chosen = new Map(own.map((c) => [c.topic_id, c.subscription]));
      return topics.map((t) => ({
        id: t.id,
        name: t.name,
        description: t.description,
        subscription: chosen.get(t.id) ?? t.default_subscription,
      }));
    },
    async choose(workspaceId, subscriberId, choices, trx = db) {
      if (!(await findSubscriber(trx, workspaceId, subscriberId))) throw notFound(`Contact ${subscriberId}`);
      for (const [i, c] of choices.entries()) {
        if (!isOneOf(TOPIC_SUBSCRIPTIONS, c.subscription))
          throw validationError(`topics[${i}].subscription`, 'must be opt_in or opt_out');
        if (!(isUuid(c.id) && (await findTopic(trx, workspaceId, c.id))))
          throw validationError(`topics[${i}].id`, `topic ${c.id} not found`);
      }
      await saveSubscriptions(
        trx,
        subscriberId,
        choices.map((c) => ({ topicId: c.id, subscription: c.subscription })),
        clock.now(),
      );
    },
  };
}
