import { recordEvent } from '../../events/record-event.js';
import { newId } from '../../shared/ids.js';
import type { Config } from '../../config/schema.js';
import type { Clock } from '../../shared/clock.js';
import type { DnsResolver } from '../../shared/dns.js';
import type { Logger } from '../../shared/logger.js';
import type { CommitBatcher } from '../../store/infra/commit-batcher.js';
import type { Db } from '../../store/infra/db.js';
import {
  listRoutesOfDomainName,
  saveReceivedEmail,
  type ReceivedEmail,
  type ReceivedEmailContent,
  type RouteWithDomain,
  type StoredAttachment,
} from '../../store/receiving.js';
import type { Email } from '../../store/emails.js';
import { queueAgentRun } from '../../store/inboxes.js';
import { InboundRefusal, type InboundKind, type InboundMessage } from '../inbound-kind.js';
import { matchRoute, splitRecipient } from './match-route.js';
import { authenticateMessage, dmarcSaysReject, type AuthenticationResults } from './authenticate-message.js';
import { parseInbound, type ParsedInbound } from './parse-inbound.js';
import { receivedEventData, type ViewContext } from './received-view.js';
import { receivedLinks } from './received-links.js';
import { findRepliedEmail } from './threading.js';
import { fileInThread, sentEmailToFile, type InboxMessageInput } from './file-in-thread.js';

/**
 * The receiving routes, the last kind the inbound listener asks: an address a workspace's
 * route covers. Taking a message: parse it (mailparser), authenticate it (mailauth), thread it
 * with what we sent, and store it with its `email.received` event in one transaction, before
 * the listener answers 250. Recipients in several workspaces give one stored message per
 * workspace, each with its own recipients.
 */

interface RoutedRecipient {
  address: string;
  /** The route that accepted the address at RCPT TO. */
  route: RouteWithDomain;
}

interface RouteKindDeps {
  db: Db;
  clock: Clock;
  config: Config;
  /** Signs the download links in the event's data. */
  secretKey: Buffer;
  resolver: DnsResolver;
  logger: Logger;
  batcher: CommitBatcher;
}

type InboundDelivery = InboundMessage & { routed: RoutedRecipient[] };

const unknownAuth = (why: string): AuthenticationResults => ({
  spf: { result: 'temperror', domain: null },
  dkim: { result: 'temperror', signatures: [] },
  dmarc: { result: 'temperror', domain: null, policy: null },
  arc: null,
  header: `; ${why}`,
});

export function routeKind(deps: RouteKindDeps): InboundKind<RoutedRecipient> {
  const { db, clock, config, resolver, logger, batcher } = deps;
  const log = logger.child({ component: 'receiving' });
  const view: ViewContext = {
    links: receivedLinks(deps.secretKey, config.http.publicUrl, clock, config.retention.days),
  };

  async function authenticate(delivery: InboundDelivery): Promise<AuthenticationResults> {
    try {
      return await authenticateMessage(
        delivery.raw,
        { ip: delivery.remoteAddress, helo: delivery.helo, sender: delivery.mailFrom, mta: config.delivery.hostname },
        resolver,
      );
    } catch (err) {
      // Recorded as unknown rather than refused: the application decides what to do with it.
      log.warn({ err }, 'could not authenticate a received message');
      return unknownAuth('authentication could not be completed');
    }
  }

  function records(
    delivery: InboundDelivery,
    parsed: ParsedInbound,
    auth: AuthenticationResults,
    workspaceId: string,
    recipients: RoutedRecipient[],
    replied: Email | undefined,
    now: number,
  ) {
    const id = newId();
    const attachments: StoredAttachment[] = parsed.attachments.map((a) => ({
      id: newId(),
      position: a.position,
      filename: a.filename,
      content_type: a.contentType,
      content_disposition: a.disposition,
      content_id: a.contentId,
      size: a.size,
      sha256: a.sha256,
    }));
    const email: ReceivedEmail = {
      id,
      workspace_id: workspaceId,
      route_ids: [...new Set(recipients.map((r) => r.route.id))],
      envelope_from: delivery.mailFrom,
      recipients: recipients.map((r) => r.address),
      from_header: parsed.from,
      from_address: parsed.fromAddress,
      to_addresses: parsed.to,
      cc_addresses: parsed.cc,
      reply_to: parsed.replyTo,
      subject: parsed.subject,
      sent_at: parsed.date,
      message_id: parsed.messageId,
      in_reply_to: parsed.inReplyTo,
      message_references: parsed.references,
      authentication: auth,
      in_reply_to_email_id: replied?.id ?? null,
      attachments,
      size: delivery.raw.length,
      remote_address: delivery.remoteAddress,
      helo: delivery.helo,
      tls: delivery.tls,
      created_at: now,
    };
    const content: ReceivedEmailContent = {
      email_id: id,
      raw: delivery.raw,
      text: parsed.text,
      html: parsed.html,
      headers: parsed.headers,
    };
    // A route for one address is an inbox: its mail is also filed in conversations.
    const inboxIds = [...new Set(recipients.filter((r) => r.route.kind === 'address').map((r) => r.route.id))];
    return { email, content, inboxIds, notify: recipients.some((r) => r.route.action === 'webhook') };
  }

  const inboxMessage = (email: ReceivedEmail, parsed: ParsedInbound, inboxId: string): InboxMessageInput => ({
    workspaceId: email.workspace_id,
    inboxId,
    direction: 'inbound',
    receivedEmailId: email.id,
    messageId: parsed.messageId,
    inReplyTo: parsed.inReplyTo,
    references: parsed.references,
    fromHeader: parsed.from,
    fromAddress: parsed.fromAddress,
    to: parsed.to,
    cc: parsed.cc,
    bcc: [],
    replyTo: parsed.replyTo,
    subject: parsed.subject,
    text: parsed.text,
    html: parsed.html,
    attachments: email.attachments.map((a) => ({
      id: a.id,
      filename: a.filename,
      content_type: a.content_type,
      size: a.size,
    })),
    at: email.created_at,
  });

  return {
    name: 'route',

    async claim(address) {
      const split = splitRecipient(address);
      const route = split ? matchRoute(await listRoutesOfDomainName(db, split.domain), split.localPart) : null;
      if (!route) return null;
      if (route.action === 'reject')
        throw new InboundRefusal(550, `5.7.1 <${address}>: this address does not accept mail`);
      return { address, route };
    },

    async receive(message, routed) {
      const delivery: InboundDelivery = { ...message, routed };
      let parsed: ParsedInbound;
      try {
        parsed = await parseInbound(delivery.raw);
      } catch (err) {
        log.warn({ err }, 'could not parse a received message');
        return { kind: 'refused', code: 554, reason: '5.6.0 The message could not be parsed as MIME' };
      }
      const auth = await authenticate(delivery);
      if (config.smtp.inbound.rejectDmarcFailures && dmarcSaysReject(auth)) {
        return {
          kind: 'refused',
          code: 550,
          reason: `5.7.1 Rejected by the DMARC policy of ${auth.dmarc.domain ?? 'the sender domain'} (p=reject)`,
        };
      }

      const byWorkspace = new Map<string, RoutedRecipient[]>();
      for (const r of delivery.routed)
        byWorkspace.set(r.route.workspace_id, [...(byWorkspace.get(r.route.workspace_id) ?? []), r]);
      const now = clock.now();
      const prepared = await Promise.all(
        [...byWorkspace].map(async ([workspaceId, recipients]) => {
          const replied = await findRepliedEmail(db, workspaceId, parsed.inReplyTo, parsed.references);
          const record = records(delivery, parsed, auth, workspaceId, recipients, replied, now);
          // A reply to mail an inbox's address sent through any intake starts its thread with that mail.
          const inboxes = [
            ...new Map(recipients.filter((r) => r.route.kind === 'address').map((r) => [r.route.id, r.route])).values(),
          ];
          const seeds = await Promise.all(
            inboxes.map((r) => sentEmailToFile(db, { id: r.id, address: `${r.local_part}@${r.domain_name}` }, replied)),
          );
          return { ...record, replied, seeds: seeds.filter((m): m is InboxMessageInput => m !== undefined) };
        }),
      );
      await batcher.run(async (trx) => {
        for (const p of prepared) {
          await saveReceivedEmail(trx, p.email, p.content);
          for (const seed of p.seeds) await fileInThread(trx, seed);
          for (const inboxId of p.inboxIds) {
            const filed = await fileInThread(trx, inboxMessage(p.email, parsed, inboxId));
            if (config.inboxes.agent.url)
              await queueAgentRun(trx, { workspaceId: p.email.workspace_id, inboxId, ...filed }, now);
          }
          if (p.notify) {
            await recordEvent(trx, {
              workspaceId: p.email.workspace_id,
              type: 'email.received',
              emailId: p.email.id,
              at: now,
              data: receivedEventData(view, p.email, p.content, p.replied),
            });
          }
        }
      });
      for (const p of prepared) {
        log.info(
          {
            receivedEmailId: p.email.id,
            workspaceId: p.email.workspace_id,
            inReplyToEmailId: p.email.in_reply_to_email_id,
            size: p.email.size,
          },
          'message received',
        );
      }
      return { kind: 'accepted', reply: `2.0.0 Ok: received as ${prepared.map((p) => p.email.id).join(', ')}` };
    },
  };
}
