import type { DashRoutes } from '../routes.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { badge, page, table, when } from '../layout.js';

/**
 * Delivery as receivers see it: the IP pools (addresses, EHLO names, warm-up) and each
 * destination (a mailbox provider from one source address) with its back-off state, as the
 * running nodes reported it. Read-only: pools are the operator's (CLI, master key).
 */
export function registerDeliveryRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/delivery', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const [pools, providers] = await Promise.all([deps.services.ipPools.list(), deps.services.queue.providers()]);
    const poolRows = pools.flatMap((p) =>
      p.addresses.map(
        (a, i) =>
          html`<tr><td>${i === 0 ? p.name : ''}</td><td>${a.address}</td><td>${a.ehlo}</td><td>${
            a.warmup
              ? html`day ${a.warmup.day} of ${a.warmup.schedule.length}: ${a.warmup.cap} per provider today${a.warmup.sent_today.length > 0 ? ` (sent ${a.warmup.sent_today.map((s) => `${s.provider} ${s.count}`).join(', ')})` : ''}`
              : badge('warm')
          }</td></tr>`,
      ),
    );
    const providerRows = providers.map(
      (p) =>
        html`<tr><td>${p.provider}</td><td>${p.source ?? 'system address'}</td><td>${badge(p.state)}${p.paused_until ? html` until ${when(p.paused_until)}` : ''}</td>
<td>${p.active} running, ${p.waiting} waiting</td><td>${p.allowed} of ${p.limit.concurrency ?? '?'} at once, ${p.per_minute ?? '?'} of ${p.limit.per_minute ?? '?'}/min</td>
<td class="wrap">${p.last_reply ? html`${when(p.last_reply_at)} ${p.last_reply}` : ''}</td><td class="wrap">${p.domains.slice(0, 5).join(', ')}${p.domains.length > 5 ? ` +${p.domains.length - 5}` : ''}</td></tr>`,
    );
    ctx.body = page(view, {
      title: 'Delivery',
      section: 'delivery',
      body: html`<div class="card"><h2>IP pools</h2><p class="muted">The source addresses mail leaves from (mailsvc ip-pools). Mail without a pool leaves from the system address.</p>
${table(['Pool', 'Address', 'EHLO', 'Warm-up'], poolRows, 'No IP pools: mail leaves from the system address.')}</div>
<div class="card"><h2>Providers</h2><p class="muted">Each mailbox provider (or MX host) per source address, as the running nodes reported it in the last 30 seconds: backoff means lowered limits after a slow-down reply, recovering with each accepted message.</p>
${table(['Provider', 'Source', 'State', 'Now', 'Limits', 'Last slow-down reply', 'Domains'], providerRows, 'Nothing delivered in the last minutes.')}</div>`,
    });
  });
}
