import { checkContactProperties } from './contact-properties.js';
import { recordEvent } from '../../events/record-event.js';
import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import type { Db } from '../../store/infra/db.js';
import { findDomain, listDomains } from '../../store/domains.js';
import {
  countSubscribers,
  findSubscriber,
  findSubscriberByEmail,
  listSubscribers,
  listTagsOf,
  removeSubscriber,
  saveSubscriber,
  saveSubscriberTags,
  updateSubscriber,
  type Subscriber,
  type SubscriberFilter,
  type SubscriberStatus,
} from '../../store/subscribers.js';
import { saveSuppressionIfAbsent } from '../../store/suppressions.js';
import type { ListPage, Listed } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';
import { checkMetadata } from '../../shared/metadata.js';
import { hasLineBreak, requireAddress } from '../../messages/addresses.js';
import {
  applyStatus,
  checkName,
  checkTags,
  mergedMetadata,
  newSubscriber,
  setStatus,
  subscriberEventData,
} from './subscriber-rows.js';
import { importSubscriberBatch, type BatchOptions } from './subscriber-batch.js';
import type { ImportOutcome, SubscriberInput } from './subscriber-rows.js';

export type { ImportOutcome, SubscriberInput } from './subscriber-rows.js';

const OPT_OUT = 'unsubscribed through the API';

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
  upsert(
    workspaceId: string,
    input: SubscriberInput,
    source?: string,
  ): Promise<{ subscriber: SubscriberView; created: boolean }>;
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
  importBatch(workspaceId: string, inputs: readonly SubscriberInput[], options: BatchOptions): Promise<ImportOutcome[]>;
}

export function createSubscriberService(deps: ServiceDeps): SubscriberService {
  const { db, clock } = deps;

  async function views(rows: Subscriber[]): Promise<SubscriberView[]> {
    if (rows.length === 0) return [];
    const tags = await listTagsOf(
      db,
      rows.map((r) => r.id),
    );
    const domains = new Map((await listDomains(db, rows[0]!.workspace_id)).map((d) => [d.id, d.name]));
    return rows.map((s) => ({
      id: s.id,
      email: s.email,
      first_name: s.first_name,
      last_name: s.last_name,
      status: s.status,
      tags: tags.get(s.id) ?? [],
      domain_id: s.domain_id,
      primary_domain:
        s.domain_id && domains.has(s.domain_id) ? { id: s.domain_id, domain_name: domains.get(s.domain_id)! } : null,
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
    if (input.external_id != null && (input.external_id.length > 255 || hasLineBreak(input.external_id)))
      throw validationError('external_id', 'must be one line of at most 255 characters');
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
            const metadata = mergedMetadata(
              changes.metadata !== undefined ? changes.metadata : existing.metadata,
              input.properties,
            );
            const all = { ...changes, ...(metadata !== undefined ? { metadata } : {}), updated_at: now };
            row = { ...existing, ...all };
            await updateSubscriber(trx, existing.id, all);
          } else {
            row = { ...newSubscriber(workspaceId, email, source, now), ...changes };
            const metadata = mergedMetadata(row.metadata, input.properties);
            if (metadata !== undefined) row.metadata = metadata;
            await saveSubscriber(trx, row);
          }
          if (tags !== undefined) await saveSubscriberTags(trx, row, tags);
          await recordEvent(trx, {
            workspaceId,
            type: existing ? 'subscriber.updated' : 'subscriber.created',
            data: await subscriberEventData(trx, row),
            at: now,
          });
          row = (await applyStatus(trx, row, input.status, now, OPT_OUT)).row;
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
      const [{ rows, more }, total] = await Promise.all([
        listSubscribers(db, filter, page),
        countSubscribers(db, filter),
      ]);
      return { items: await views(rows), total, more };
    },

    views,
    get: async (workspaceId, id) => view(await find(workspaceId, id)),

    async update(workspaceId, id, input) {
      const existing = await find(workspaceId, id);
      const email = input.email === undefined ? undefined : requireAddress('email', input.email);
      if (
        email &&
        email.toLowerCase() !== existing.email_key &&
        (await findSubscriberByEmail(db, workspaceId, email))
      ) {
        throw validationError('email', `another subscriber has the address ${email}`);
      }
      const tags = checkTags(input.tags);
      await checkDeclared(workspaceId, input);
      const changes = await fields(workspaceId, input);
      const row = await db.transaction().execute(async (trx) => {
        const now = clock.now();
        // Read again in the transaction: properties merge into the metadata as it is now.
        const current = (await findSubscriber(trx, workspaceId, existing.id)) ?? existing;
        const metadata = mergedMetadata(
          changes.metadata !== undefined ? changes.metadata : current.metadata,
          input.properties,
        );
        const all = {
          ...changes,
          ...(metadata !== undefined ? { metadata } : {}),
          ...(email ? { email, email_key: email.toLowerCase() } : {}),
          updated_at: now,
        };
        const row: Subscriber = { ...current, ...all };
        await updateSubscriber(trx, existing.id, all);
        if (tags !== undefined) await saveSubscriberTags(trx, row, tags);
        const status = await applyStatus(trx, row, input.status, now, OPT_OUT);
        if (!status.changed)
          await recordEvent(trx, {
            workspaceId,
            type: 'subscriber.updated',
            data: await subscriberEventData(trx, row),
            at: now,
          });
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

    importBatch: (workspaceId, inputs, options) => importSubscriberBatch(deps, workspaceId, inputs, options),

    async unsubscribe(trx, workspaceId, address, emailId) {
      const now = clock.now();
      const key = address.toLowerCase();
      await saveSuppressionIfAbsent(trx, {
        workspace_id: workspaceId,
        address: key,
        scope: 'marketing',
        reason: 'unsubscribe',
        detail: 'one-click unsubscribe',
        email_id: emailId,
        created_at: now,
      });
      const subscriber = await findSubscriberByEmail(trx, workspaceId, key);
      if (subscriber) await setStatus(trx, subscriber, 'unsubscribed', emailId, now);
    },
  };
}
