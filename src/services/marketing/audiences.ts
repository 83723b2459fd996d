import { toIso } from '../../shared/clock.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  countAudiences,
  countMembers,
  findAudience,
  findMember,
  listAudiences,
  listConditionalAudiences,
  countAudiencesOf,
  listAudiencesOf,
  listMembers,
  removeAudience,
  removeMember,
  renameAudience,
  saveAudience,
  saveMembers,
  updateAudienceConditions,
  type Audience,
} from '../../store/audiences.js';
import type { PropertyCondition } from '../../store/property-conditions.js';
import { checkSegmentConditions } from './segment-conditions.js';
import { findSubscriber, findSubscriberByEmail } from '../../store/subscribers.js';
import type { ListPage, Listed } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';
import type { SubscriberService, SubscriberView } from './subscribers.js';

export interface AudienceView {
  id: string;
  object: 'audience';
  name: string;
  member_count: number;
  /** Conditions on contact properties: every contact meeting all of them is a member too. */
  conditions: Array<Omit<PropertyCondition, 'type'>> | null;
  created_at: string;
}

/** Most members added by one request. */
const MAX_MEMBERS_PER_REQUEST = 1000;

export interface AudienceService {
  create(workspaceId: string, name: string, conditions?: unknown): Promise<AudienceView>;
  /** Sets (or, with null or [], removes) the conditions on contact properties. */
  setConditions(workspaceId: string, id: string, conditions: unknown): Promise<AudienceView>;
  list(workspaceId: string, page: ListPage): Promise<Listed<AudienceView>>;
  get(workspaceId: string, id: string): Promise<AudienceView>;
  remove(workspaceId: string, id: string): Promise<void>;
  rename(workspaceId: string, id: string, name: string): Promise<AudienceView>;
  /** The audiences a subscriber is in, newest first. */
  of(workspaceId: string, subscriberId: string, page: ListPage): Promise<Listed<AudienceView>>;
  /** Adds subscribers by id or by address (addresses must be subscribers already). */
  addMembers(
    workspaceId: string,
    id: string,
    members: { subscriberIds?: string[] | undefined; emails?: string[] | undefined },
  ): Promise<{ added: number; audience: AudienceView }>;
  removeMember(workspaceId: string, id: string, subscriberId: string): Promise<void>;
  hasMember(workspaceId: string, id: string, subscriberId: string): Promise<boolean>;
  members(workspaceId: string, id: string, page: ListPage): Promise<Listed<SubscriberView>>;
}

export function createAudienceService(deps: ServiceDeps & { subscribers: SubscriberService }): AudienceService {
  const { db, clock, subscribers } = deps;
  const { dialect } = deps;
  const view = (a: Audience, memberCount: number): AudienceView => ({
    id: a.id,
    object: 'audience',
    name: a.name,
    member_count: memberCount,
    conditions: a.conditions === null ? null : a.conditions.map(({ type: _type, ...c }) => c),
    created_at: toIso(a.created_at),
  });
  const find = async (workspaceId: string, id: string): Promise<Audience> => {
    const found = isUuid(id) ? await findAudience(db, workspaceId, id) : undefined;
    if (!found) throw notFound(`Audience ${id}`);
    return found;
  };
  const get = async (workspaceId: string, id: string) => {
    const a = await find(workspaceId, id);
    return view(a, await countMembers(db, dialect, a));
  };
  const checkName = (name: string): string => {
    const trimmed = name.trim();
    if (trimmed === '' || trimmed.length > 200) throw validationError('name', 'must be 1 to 200 characters');
    return trimmed;
  };
  return {
    async create(workspaceId, name, conditions) {
      const checked = conditions === undefined ? null : await checkSegmentConditions(db, workspaceId, conditions);
      const row: Audience = {
        id: newId(),
        workspace_id: workspaceId,
        name: checkName(name),
        conditions: checked,
        created_at: clock.now(),
      };
      await saveAudience(db, row);
      return get(workspaceId, row.id);
    },
    async setConditions(workspaceId, id, conditions) {
      const audience = await find(workspaceId, id);
      const checked = await checkSegmentConditions(db, workspaceId, conditions);
      await updateAudienceConditions(db, audience.id, checked);
      return get(workspaceId, audience.id);
    },
    async list(workspaceId, page) {
      const [{ rows, more }, total] = await Promise.all([
        listAudiences(db, workspaceId, page),
        countAudiences(db, workspaceId),
      ]);
      const counts = await Promise.all(rows.map((a) => countMembers(db, dialect, a)));
      return { items: rows.map((r, i) => view(r, counts[i]!)), total, more };
    },
    get,
    async remove(workspaceId, id) {
      await removeAudience(db, workspaceId, (await find(workspaceId, id)).id);
    },
    async rename(workspaceId, id, name) {
      const audience = await find(workspaceId, id);
      await renameAudience(db, audience.id, checkName(name));
      return get(workspaceId, audience.id);
    },
    async of(workspaceId, subscriberId, page) {
      // Audiences with conditions the subscriber meets count too: each is one indexed look-up.
      const meeting: string[] = [];
      for (const a of await listConditionalAudiences(db, workspaceId))
        if (await findMember(db, dialect, { id: a.id, conditions: a.conditions }, subscriberId)) meeting.push(a.id);
      const [{ rows, more }, total] = await Promise.all([
        listAudiencesOf(db, workspaceId, subscriberId, meeting, page),
        countAudiencesOf(db, workspaceId, subscriberId, meeting),
      ]);
      const counts = await Promise.all(rows.map((a) => countMembers(db, dialect, a)));
      return { items: rows.map((a, i) => view(a, counts[i]!)), total, more };
    },
    async addMembers(workspaceId, id, members) {
      const audience = await find(workspaceId, id);
      const ids = members.subscriberIds ?? [];
      const emails = members.emails ?? [];
      if (ids.length + emails.length === 0) throw validationError('subscriber_ids', 'give subscriber_ids or emails');
      if (ids.length + emails.length > MAX_MEMBERS_PER_REQUEST)
        throw validationError('subscriber_ids', `at most ${MAX_MEMBERS_PER_REQUEST} members per request`);
      const resolved: string[] = [];
      for (const [i, sid] of ids.entries()) {
        if (!isUuid(sid) || !(await findSubscriber(db, workspaceId, sid)))
          throw validationError(`subscriber_ids[${i}]`, `no subscriber ${sid}`);
        resolved.push(sid);
      }
      for (const [i, email] of emails.entries()) {
        const s = await findSubscriberByEmail(db, workspaceId, email);
        if (!s) throw validationError(`emails[${i}]`, `${email} is not a subscriber`);
        resolved.push(s.id);
      }
      const added = await saveMembers(db, audience.id, resolved, clock.now());
      return { added, audience: await get(workspaceId, id) };
    },
    async hasMember(workspaceId, id, subscriberId) {
      return findMember(db, dialect, await find(workspaceId, id), subscriberId);
    },
    async removeMember(workspaceId, id, subscriberId) {
      const audience = await find(workspaceId, id);
      if (!(await removeMember(db, audience.id, subscriberId)))
        throw notFound(`Subscriber ${subscriberId} in audience ${id}`);
    },
    async members(workspaceId, id, page) {
      const audience = await find(workspaceId, id);
      const [{ rows, more }, total] = await Promise.all([
        listMembers(db, dialect, audience, page),
        countMembers(db, dialect, audience),
      ]);
      return { items: await subscribers.views(rows), total, more };
    },
  };
}
