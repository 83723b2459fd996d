import type { Db, Dialect } from './infra/db.js';
import { jsonText } from './infra/dialect.js';
import { emailRows } from './emails.js';
import { eventRows } from './events.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';

/**
 * Who did what with a campaign's messages, read from the events of its emails (one email per
 * contact): the recipients that have events of one type, and the links clicked.
 */

interface CampaignRecipientRow {
  email_id: string;
  subscriber_id: string | null;
  /** The contact's address; null when the contact was removed since. */
  subscriber_email: string | null;
  to_addresses: string[];
  count: number;
  /** The last event's data (bounces: its `bounce.type`). */
  last_data: Record<string, unknown>;
}

export async function listCampaignRecipients(
  db: Db,
  filter: { workspaceId: string; campaignId: string; eventType: string; emailKey?: string | undefined },
  page: ListPage,
): Promise<PageOf<CampaignRecipientRow>> {
  const query = db
    .selectFrom('events')
    .innerJoin('emails', 'emails.id', 'events.email_id')
    .leftJoin('subscribers', 'subscribers.id', 'emails.subscriber_id')
    .where('emails.workspace_id', '=', filter.workspaceId)
    .where('emails.campaign_id', '=', filter.campaignId)
    .where('events.type', '=', filter.eventType)
    .$if(filter.emailKey !== undefined, (q) => q.where('subscribers.email_key', '=', filter.emailKey!))
    .groupBy(['emails.id', 'emails.subscriber_id', 'subscribers.email', 'emails.to_addresses'])
    .select((eb) => [
      'emails.id as email_id',
      'emails.subscriber_id',
      'subscribers.email as subscriber_email',
      'emails.to_addresses',
      eb.fn.countAll<number | string>().as('count'),
      eb.fn.max('events.seq').as('last_seq'),
    ]);
  const { rows, more } = await readPage(query, 'emails.id', page, true);
  if (rows.length === 0) return { rows: [], more };
  const last = eventRows.decodeAll(
    await db
      .selectFrom('events')
      .select(['seq', 'data'])
      .where(
        'seq',
        'in',
        rows.map((r) => Number(r.last_seq)),
      )
      .execute(),
  );
  const dataOf = new Map(last.map((e) => [Number(e.seq), e.data]));
  return {
    rows: rows.map((r) => ({
      email_id: r.email_id,
      subscriber_id: r.subscriber_id,
      subscriber_email: r.subscriber_email,
      to_addresses: emailRows.decode({ to_addresses: r.to_addresses }).to_addresses,
      count: Number(r.count),
      last_data: dataOf.get(Number(r.last_seq)) ?? {},
    })),
    more,
  };
}

interface ClickedLinkRow {
  url: string;
  clicks: number;
  unique_clicks: number;
}

/** The links of a campaign's messages that were clicked, by URL (ascending), with clicks and distinct messages. */
export async function listCampaignClickedLinks(
  db: Db,
  dialect: Dialect,
  filter: { workspaceId: string; campaignId: string; emailIds?: string[] | undefined },
  page: { limit: number; after?: string | undefined; before?: string | undefined },
): Promise<{ rows: ClickedLinkRow[]; more: boolean }> {
  const url = jsonText(dialect, 'events.data', 'url');
  const base = db
    .selectFrom('events')
    .innerJoin('emails', 'emails.id', 'events.email_id')
    .where('emails.workspace_id', '=', filter.workspaceId)
    .where('emails.campaign_id', '=', filter.campaignId)
    .where('events.type', '=', 'email.clicked')
    .where(url, 'is not', null)
    .$if(filter.emailIds !== undefined, (q) => q.where('emails.id', 'in', filter.emailIds!))
    .groupBy(url)
    .select((eb) => [
      url.as('url'),
      eb.fn.countAll<number | string>().as('clicks'),
      eb.fn.count<number | string>('emails.id').distinct().as('unique_clicks'),
    ]);
  const backward = page.before !== undefined;
  const cursor = page.before ?? page.after;
  const rows = await (cursor !== undefined ? base.having(url, backward ? '<' : '>', cursor) : base)
    .orderBy(url, backward ? 'desc' : 'asc')
    .limit(page.limit + 1)
    .execute();
  const kept = rows
    .slice(0, page.limit)
    .map((r) => ({ url: String(r.url), clicks: Number(r.clicks), unique_clicks: Number(r.unique_clicks) }));
  return { rows: backward ? kept.reverse() : kept, more: rows.length > page.limit };
}

/** Clicks per URL of each of these emails. */
export async function listClicksOfEmails(
  db: Db,
  dialect: Dialect,
  emailIds: string[],
): Promise<Array<{ email_id: string; url: string; clicks: number }>> {
  if (emailIds.length === 0) return [];
  const url = jsonText(dialect, 'data', 'url');
  const rows = await db
    .selectFrom('events')
    .where('type', '=', 'email.clicked')
    .where('email_id', 'in', emailIds)
    .where(url, 'is not', null)
    .groupBy(['email_id', url])
    .select((eb) => ['email_id', url.as('url'), eb.fn.countAll<number | string>().as('clicks')])
    .orderBy(url)
    .execute();
  return rows.map((r) => ({ email_id: r.email_id!, url: String(r.url), clicks: Number(r.clicks) }));
}
