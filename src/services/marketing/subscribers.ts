import { checkContactProperties } from './contact-properties.js';
import { recordEvents, type NewEvent } from '../../events/record-event.js';
import { isAppError } from '../../shared/errors.js';
import { checkTypedValues, type FieldSchema, type FieldType } from '../../shared/typed-fields.js';
import { listAllContactProperties } from '../../store/contact-properties.js';
import { recordEvent } from '../../events/record-event.js';
import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { Db } from '../../store/db.js';
import { findDomain, listDomains } from '../../store/domains.js';
import {
  countSubscribers,
  findSubscriber,
  findSubscriberByEmail,
  listSubscribers,
  listTagsOf,
  removeSubscriber,
  listSubscribersByEmailKeys,
  saveSubscriber,
  saveSubscribers,
  saveSubscriberTags,
  updateSubscriber,
  type Subscriber,
  type SubscriberFilter,
  type SubscriberStatus,
} from '../../store/subscribers.js';
import { findSuppression, removeSuppression, saveSuppressionIfAbsent } from '../../store/suppressions.js';
import type { ListPage, Listed } from '../../store/list-page.js';
import type { ServiceDeps } from '../deps.js';
import { checkMetadata } from '../../shared/metadata.js';
import { hasLineBreak, requireAddress } from '../../messages/addresses.js';

export const MAX_SUBSCRIBER_TAGS = 50;

export interface SubscriberInput {
  email: string;
  first_name?: string | null | undefined;
  last_name?: string | null | undefined;
  tags?: string[] | undefined;
  domain_id?: string | null | undefined;
  external_id?: string | null | undefined;
  metadata?: Record<string, unknown> | null | undefined;
  /** Set or, with null, remove single metadata keys (Resend's contact properties); others stay. */
  properties?: Record<string, unknown> | undefined;
  /** Opting out (or back in) as the subscriber is written. */
  status?: SubscriberStatus | undefined;
}

export interface SubscriberView {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  status: SubscriberStatus;
  tags: string[];
  domain_id: string | null;
  primary_domain: { id: string; domain_name: string } | null;
  external_id: string | null;
  metadata: Record<string, unknown> | null;
  source: string;
  created_at: string;
  updated_at: string;
  unsubscribed_at: string | null;
}

export interface SubscriberService {
  /** Creates, or updates the subscriber with that address (SPEC: upsert by email). */
  upsert(workspaceId: string, input: SubscriberInput, source?: string): Promise<{ subscriber: SubscriberView; created: boolean }>;
  list(filter: SubscriberFilter, page: ListPage): Promise<Listed<SubscriberView>>;
  /** Views of subscriber rows read elsewhere (audience members). */
  views(rows: Subscriber[]): Promise<SubscriberView[]>;
  /** By id or by address. */
  get(workspaceId: string, idOrEmail: string): Promise<SubscriberView>;
  update(workspaceId: string, idOrEmail: string, changes: Partial<SubscriberInput>): Promise<SubscriberView>;
  remove(workspaceId: string, idOrEmail: string): Promise<SubscriberView>;
  /**
   * Opts an address out of marketing mail: the subscriber (if any) becomes unsubscribed and a
   * marketing-scope suppression is added, in one transaction with the event.
   */
  unsubscribe(trx: Db, workspaceId: string, address: string, emailId: string | null): Promise<void>;
  /**
   * Writes many subscribers in one transaction (contact imports): each input is checked like
   * an upsert's; a bad one gets its reason at its index and the others are written. With
   * `onConflict: 'skip'` an address already known is left as it is. `after` runs in the same
   * transaction with the written subscribers (topic choices, the import's progress).
   */
  importBatch(
    workspaceId: string,
    inputs: readonly SubscriberInput[],
    options: { onConflict: 'upsert' | 'skip'; source?: string; after?: (trx: Db, written: Array<{ index: number; id: string }>, outcomes: readonly ImportOutcome[]) => Promise<void> },
  ): Promise<ImportOutcome[]>;
}

export type ImportOutcome = { outcome: 'created' | 'updated' | 'skipped'; id: string } | { outcome: 'failed'; reason: string };

const checkName = (field: string, value: string | null | undefined) => {
  if (value != null && (value.length > 200 || hasLineBreak(value))) throw validationError(field, 'must be one line of at most 200 characters');
};

function checkTags(tags: string[] | undefined): string[] | undefined {
  if (tags === undefined) return undefined;
  if (tags.length > MAX_SUBSCRIBER_TAGS) throw validationError('tags', `at most ${MAX_SUBSCRIBER_TAGS} tags`);
  tags.forEach((t, i) => {
    if (t.trim() === '' || t.length > 100 || /[\u0000-\u001f]/.test(t)) throw validationError(`tags[${i}]`, 'must be 1 to 100 printable characters');
  });
  return [...new Set(tags.map((t) => t.trim()))];
}

/** The data of a `subscriber.*` event: the subscriber as it is now (read in the change's transaction). */
export async function subscriberEventData(trx: Db, s: Subscriber): Promise<Record<string, unknown>> {
  const tags = (await listTagsOf(trx, [s.id])).get(s.id) ?? [];
  return {
    subscriber_id: s.id,
    email: s.email,
    status: s.status,
    first_name: s.first_name,
    last_name: s.last_name,
    tags,
    external_id: s.external_id,
    metadata: s.metadata,
    timestamp: toIso(s.updated_at),
  };
}

export function createSubscriberService(deps: ServiceDeps): SubscriberService {
  const { db, clock } = deps;

  async function views(rows: Subscriber[]): Promise<SubscriberView[]> {
    if (rows.length === 0) return [];
    const tags = await listTagsOf(db, rows.map((r) => r.id));
    const domains = new Map((await listDomains(db, rows[0]!.workspace_id)).map((d) => [d.id, d.name]));
    return rows.map((s) => ({
      id: s.id,
      email: s.email,
      first_name: s.first_name,
      last_name: s.last_name,
      status: s.status,
      tags: tags.get(s.id) ?? [],
      domain_id: s.domain_id,
      primary_domain: s.domain_id && domains.has(s.domain_id) ? { id: s.domain_id, domain_name: domains.get(s.domain_id)! } : null,
      external_id: s.external_id,
      metadata: s.metadata,
      source: s.source,
      created_at: toIso(s.created_at),
      updated_at: toIso(s.updated_at),
      unsubscribed_at: toIsoOrNull(s.unsubscribed_at),
    }));
  }
  const view = async (s: Subscriber) => (await views([s]))[0]!;

  /** Checks the optional fields; returns the row changes they make. */
  async function fields(workspaceId: string, input: Partial<SubscriberInput>): Promise<Partial<Subscriber>> {
    checkName('first_name', input.first_name);
    checkName('last_name', input.last_name);
    if (input.external_id != null && (input.external_id.length > 255 || hasLineBreak(input.external_id))) throw validationError('external_id', 'must be one line of at most 255 characters');
    if (input.metadata != null) checkMetadata('metadata', input.metadata);
    if (input.domain_id != null && !(isUuid(input.domain_id) && (await findDomain(db, workspaceId, input.domain_id)))) {
      throw validationError('domain_id', `no domain ${input.domain_id} in this workspace`);
    }
    const changes: Partial<Subscriber> = {};
    if (input.first_name !== undefined) changes.first_name = input.first_name;
    if (input.last_name !== undefined) changes.last_name = input.last_name;
    if (input.domain_id !== undefined) changes.domain_id = input.domain_id;
    if (input.external_id !== undefined) changes.external_id = input.external_id;
    if (input.metadata !== undefined) changes.metadata = input.metadata;
    return changes;
  }

  async function find(workspaceId: string, idOrEmail: string): Promise<Subscriber> {
    const found = isUuid(idOrEmail)
      ? await findSubscriber(db, workspaceId, idOrEmail.toLowerCase())
      : idOrEmail.includes('@')
        ? await findSubscriberByEmail(db, workspaceId, idOrEmail)
        : undefined;
    if (!found) throw notFound(`Subscriber ${idOrEmail}`);
    return found;
  }

  /** Metadata with `properties` merged in (null removes a key), within the size limit. */
  function mergedMetadata(current: Record<string, unknown> | null, properties: Record<string, unknown> | undefined): Record<string, unknown> | null | undefined {
    if (properties === undefined) return undefined;
    const merged: Record<string, unknown> = { ...current };
    for (const [key, value] of Object.entries(properties)) {
      if (value === null) delete merged[key];
      else merged[key] = value;
    }
    // The limit applies to the merged result: the contact's properties together.
    checkMetadata('properties', merged);
    return Object.keys(merged).length === 0 ? null : merged;
  }

  /** Applies a status change (and the opt-out suppression it brings) in the caller's transaction. */
  async function applyStatus(trx: Db, row: Subscriber, status: SubscriberStatus | undefined, now: number): Promise<{ row: Subscriber; changed: boolean }> {
    if (status === undefined || status === row.status) return { row, changed: false };
    const next = await setStatus(trx, row, status, null, now);
    if (status === 'unsubscribed') {
      await saveSuppressionIfAbsent(trx, { workspace_id: row.workspace_id, address: row.email_key, scope: 'marketing', reason: 'unsubscribe', detail: 'unsubscribed through the API', email_id: null, created_at: now });
    }
    return { row: next, changed: true };
  }

  async function setStatus(trx: Db, s: Subscriber, status: SubscriberStatus, emailId: string | null, now: number): Promise<Subscriber> {
    if (s.status === status) return s;
    const next = { ...s, status, updated_at: now, unsubscribed_at: status === 'unsubscribed' ? now : null };
    await updateSubscriber(trx, s.id, { status, updated_at: now, unsubscribed_at: next.unsubscribed_at });
    if (status === 'unsubscribed') {
      await recordEvent(trx, { workspaceId: s.workspace_id, type: 'subscriber.unsubscribed', emailId, data: await subscriberEventData(trx, next), at: now });
    } else {
      // Re-subscribing (an explicit request) lifts the opt-out it left behind, never a bounce
      // or complaint suppression.
      if ((await findSuppression(trx, s.workspace_id, s.email_key))?.reason === 'unsubscribe') await removeSuppression(trx, s.workspace_id, s.email_key);
      await recordEvent(trx, { workspaceId: s.workspace_id, type: 'subscriber.updated', data: await subscriberEventData(trx, next), at: now });
    }
    return next;
  }

  /** Declared contact properties (contactProperties.create) keep their types, on both surfaces. */
  const checkDeclared = async (workspaceId: string, input: Partial<SubscriberInput>): Promise<void> => {
    if (input.properties) await checkContactProperties(db, workspaceId, input.properties);
    if (input.metadata) await checkContactProperties(db, workspaceId, input.metadata);
  };

  return {
    async upsert(workspaceId, input, source = 'api') {
      const email = requireAddress('email', input.email);
      const tags = checkTags(input.tags);
      await checkDeclared(workspaceId, input);
      const changes = await fields(workspaceId, input);
      const run = () =>
        db.transaction().execute(async (trx) => {
          const now = clock.now();
          const existing = await findSubscriberByEmail(trx, workspaceId, email);
          let row: Subscriber;
          if (existing) {
            // The address keeps the spelling it was first registered with.
            const metadata = mergedMetadata(changes.metadata !== undefined ? changes.metadata : existing.metadata, input.properties);
            const all = { ...changes, ...(metadata !== undefined ? { metadata } : {}), updated_at: now };
            row = { ...existing, ...all };
            await updateSubscriber(trx, existing.id, all);
          } else {
            row = {
              id: newId(),
              workspace_id: workspaceId,
              email,
              email_key: email.toLowerCase(),
              first_name: null,
              last_name: null,
              status: 'subscribed',
              domain_id: null,
              external_id: null,
              metadata: null,
              source,
              created_at: now,
              updated_at: now,
              unsubscribed_at: null,
              ...changes,
            };
            const metadata = mergedMetadata(row.metadata, input.properties);
            if (metadata !== undefined) row.metadata = metadata;
            await saveSubscriber(trx, row);
          }
          if (tags !== undefined) await saveSubscriberTags(trx, row, tags);
          await recordEvent(trx, { workspaceId, type: existing ? 'subscriber.updated' : 'subscriber.created', data: await subscriberEventData(trx, row), at: now });
          row = (await applyStatus(trx, row, input.status, now)).row;
          return { row, created: !existing };
        });
      let result;
      try {
        result = await run();
      } catch (err) {
        // Two requests created the same address at once: the loser updates what the winner made.
        if (!(await findSubscriberByEmail(db, workspaceId, email))) throw err;
        result = await run();
      }
      return { subscriber: await view(result.row), created: result.created };
    },

    async list(filter, page) {
      const [{ rows, more }, total] = await Promise.all([listSubscribers(db, filter, page), countSubscribers(db, filter)]);
      return { items: await views(rows), total, more };
    },

    views,
    get: async (workspaceId, id) => view(await find(workspaceId, id)),

    async update(workspaceId, id, input) {
      const existing = await find(workspaceId, id);
      const email = input.email === undefined ? undefined : requireAddress('email', input.email);
      if (email && email.toLowerCase() !== existing.email_key && (await findSubscriberByEmail(db, workspaceId, email))) {
        throw validationError('email', `another subscriber has the address ${email}`);
      }
      const tags = checkTags(input.tags);
      await checkDeclared(workspaceId, input);
      const changes = await fields(workspaceId, input);
      const row = await db.transaction().execute(async (trx) => {
        const now = clock.now();
        // Read again in the transaction: properties merge into the metadata as it is now.
        const current = (await findSubscriber(trx, workspaceId, existing.id)) ?? existing;
        const metadata = mergedMetadata(changes.metadata !== undefined ? changes.metadata : current.metadata, input.properties);
        const all = { ...changes, ...(metadata !== undefined ? { metadata } : {}), ...(email ? { email, email_key: email.toLowerCase() } : {}), updated_at: now };
        const row: Subscriber = { ...current, ...all };
        await updateSubscriber(trx, existing.id, all);
        if (tags !== undefined) await saveSubscriberTags(trx, row, tags);
        const status = await applyStatus(trx, row, input.status, now);
        if (!status.changed) await recordEvent(trx, { workspaceId, type: 'subscriber.updated', data: await subscriberEventData(trx, row), at: now });
        return status.row;
      });
      return view(row);
    },

    async remove(workspaceId, idOrEmail) {
      const found = await find(workspaceId, idOrEmail);
      const removed = await view(found);
      await removeSubscriber(db, workspaceId, found.id);
      return removed;
    },

    async importBatch(workspaceId, inputs, options) {
      const declared = await listAllContactProperties(db, workspaceId);
      const schema: FieldSchema = Object.fromEntries(declared.map((p) => [p.key, p.type as FieldType]));
      const outcomes: ImportOutcome[] = new Array(inputs.length);
      const fail = (i: number, err: unknown) => {
        if (!isAppError(err)) throw err;
        outcomes[i] = { outcome: 'failed', reason: err.message };
      };
      const checked: Array<{ index: number; email: string; input: SubscriberInput }> = [];
      for (const [index, input] of inputs.entries()) {
        try {
          const email = requireAddress('email', input.email);
          checkName('first_name', input.first_name);
          checkName('last_name', input.last_name);
          if (input.properties) checkTypedValues('properties', schema, input.properties);
          checked.push({ index, email, input });
        } catch (err) {
          fail(index, err);
        }
      }
      await db.transaction().execute(async (trx) => {
        const now = clock.now();
        const keys = [...new Set(checked.map((c) => c.email.toLowerCase()))];
        const known = new Map((await listSubscribersByEmailKeys(trx, workspaceId, keys)).map((row) => [row.email_key, row]));
        const tags = await listTagsOf(trx, [...known.values()].map((r) => r.id));
        // Rows new to this batch are inserted together at its end; a later line of the same
        // address changes the pending row.
        const fresh = new Map<string, Subscriber>();
        const changed = new Map<string, Subscriber>();
        const statusChanges: Array<{ row: Subscriber; status: SubscriberStatus }> = [];
        const written: Array<{ index: number; id: string }> = [];
        for (const { index, email, input } of checked) {
          const key = email.toLowerCase();
          try {
            const pending = fresh.get(key);
            const existing = pending ?? changed.get(key) ?? known.get(key);
            if (existing && !pending && options.onConflict === 'skip') {
              outcomes[index] = { outcome: 'skipped', id: existing.id };
              continue;
            }
            const metadata = mergedMetadata(existing?.metadata ?? null, input.properties);
            const base: Subscriber = existing ?? {
              id: newId(),
              workspace_id: workspaceId,
              email,
              email_key: key,
              first_name: null,
              last_name: null,
              status: 'subscribed',
              domain_id: null,
              external_id: null,
              metadata: null,
              source: options.source ?? 'import',
              created_at: now,
              updated_at: now,
              unsubscribed_at: null,
            };
            const row: Subscriber = {
              ...base,
              ...(input.first_name !== undefined ? { first_name: input.first_name } : {}),
              ...(input.last_name !== undefined ? { last_name: input.last_name } : {}),
              ...(metadata !== undefined ? { metadata } : {}),
              updated_at: now,
            };
            if (!existing || pending) {
              if (input.status !== undefined) Object.assign(row, { status: input.status, unsubscribed_at: input.status === 'unsubscribed' ? now : null });
              fresh.set(key, row);
            } else {
              changed.set(key, row);
              if (input.status !== undefined && input.status !== row.status) statusChanges.push({ row, status: input.status });
            }
            // A second line of an address new in this batch updates what the first created.
            outcomes[index] = { outcome: existing ? 'updated' : 'created', id: row.id };
            written.push({ index, id: row.id });
          } catch (err) {
            fail(index, err);
          }
        }
        const inserts = [...fresh.values()];
        await saveSubscribers(trx, inserts);
        // Whether a line changed what the contact had: its properties compared as stored, as JSON.
        const edited = (row: Subscriber, before: Subscriber) =>
          row.first_name !== before.first_name || row.last_name !== before.last_name || JSON.stringify(row.metadata) !== JSON.stringify(before.metadata);
        for (const row of changed.values()) {
          if (!edited(row, known.get(row.email_key)!)) continue;
          await updateSubscriber(trx, row.id, { first_name: row.first_name, last_name: row.last_name, metadata: row.metadata, updated_at: now });
        }
        for (const row of inserts.filter((r) => r.status === 'unsubscribed')) {
          await saveSuppressionIfAbsent(trx, { workspace_id: workspaceId, address: row.email_key, scope: 'marketing', reason: 'unsubscribe', detail: 'unsubscribed in a contact import', email_id: null, created_at: now });
        }
        const eventOf = (type: 'subscriber.created' | 'subscriber.updated', s: Subscriber): NewEvent => ({
          workspaceId,
          type,
          at: now,
          data: {
            subscriber_id: s.id,
            email: s.email,
            status: s.status,
            first_name: s.first_name,
            last_name: s.last_name,
            tags: tags.get(s.id) ?? [],
            external_id: s.external_id,
            metadata: s.metadata,
            timestamp: toIso(now),
          },
        });
        const changedRows = [...changed.values()].filter((r) => edited(r, known.get(r.email_key)!));
        await recordEvents(trx, [...inserts.map((r) => eventOf('subscriber.created', r)), ...changedRows.map((r) => eventOf('subscriber.updated', r))]);
        for (const { row, status } of statusChanges) await applyStatus(trx, row, status, now);
        if (options.after) await options.after(trx, written, outcomes);
      });
      return outcomes;
    },

    async unsubscribe(trx, workspaceId, address, emailId) {
      const now = clock.now();
      const key = address.toLowerCase();
      await saveSuppressionIfAbsent(trx, { workspace_id: workspaceId, address: key, scope: 'marketing', reason: 'unsubscribe', detail: 'one-click unsubscribe', email_id: emailId, created_at: now });
      const subscriber = await findSubscriberByEmail(trx, workspaceId, key);
      if (subscriber) await setStatus(trx, subscriber, 'unsubscribed', emailId, now);
    },
  };
}
