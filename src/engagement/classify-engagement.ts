import type { EngagementClass, EngagementRules } from './engagement-rules.js';

/** One fetch of a tracked pixel or link, as the tracking endpoint saw it. */
export interface Fetch {
  kind: 'open' | 'click';
  method: string;
  /** The client's address, behind the trusted proxies (intake/http/client-address.ts). */
  ip: string | null;
  userAgent: string | null;
  /** Milliseconds since the message was delivered; null when its delivery is not recorded. */
  sinceDelivery: number | null;
  /** Milliseconds since the last click on another link of the same message; null when none. */
  sinceOtherLink: number | null;
  /** A click: whether a browser (an open classified as a person's) from the same client address opened the message before. */
  openedBySameClient: boolean;
}

interface Classification {
  class: EngagementClass;
  /** The rule that decided, for people checking a figure: `head_request`, `agent:gmail`, `network:microsoft-eop`, … */
  by: string;
}

/**
 * Who fetched a pixel or followed a link: a person (`human`), Apple's Mail Privacy Protection
 * (`apple_mpp`), a mailbox provider's image proxy on its user's open (`proxy`), or a security
 * scanner or link checker (`scanner`). Pure; the rules in the order docs/engagement.md lists
 * them, the first that matches decides.
 *
 * A click is never Apple's or a proxy's: those fetch images only. A click through Apple's relay
 * networks is a person browsing with iCloud Private Relay, so those networks decide opens only,
 * and an image proxy's user agent on a link is a machine posing as one.
 *
 * Timing alone never makes a scanner: people click sign-in and password-reset links seconds
 * after delivery. A fast click is a scanner's only with a second sign (HEAD, a scanner's agent
 * or network, every link in a burst, or no earlier open by that client); a browser's open from
 * the same client before the click makes it a person's.
 */
export function classifyEngagement(f: Fetch, rules: EngagementRules): Classification {
  if (f.method === 'HEAD') return { class: 'scanner', by: 'head_request' };
  const agent = f.userAgent?.trim() ?? '';
  // Every browser and mail client sends one.
  if (agent === '') return { class: 'scanner', by: 'no_user_agent' };

  const agentRule = rules.agents.find((r) => r.pattern.test(agent));
  if (agentRule?.class === 'scanner') return { class: 'scanner', by: `agent:${agentRule.who}` };
  const network = rules.networks.find(f.ip);
  if (network?.startsWith('scanner:')) return { class: 'scanner', by: `network:${network.slice('scanner:'.length)}` };

  if (f.kind === 'open') {
    if (agentRule) return { class: agentRule.class, by: `agent:${agentRule.who}` };
    if (network) {
      const [cls, who] = network.split(':') as [EngagementClass, string];
      return { class: cls, by: `network:${who}` };
    }
    return { class: 'human', by: 'default' };
  }

  if (agentRule) return { class: 'scanner', by: `agent:${agentRule.who}` };
  if (f.sinceOtherLink !== null && f.sinceOtherLink < rules.timing.burstMs)
    return { class: 'scanner', by: 'link_burst' };
  if (f.openedBySameClient) return { class: 'human', by: 'opened_first' };
  // Fast, and nothing from this client opened the message first: two signs.
  if (f.sinceDelivery !== null && f.sinceDelivery < rules.timing.clickAfterDeliveryMs)
    return { class: 'scanner', by: 'click_after_delivery' };
  return { class: 'human', by: 'default' };
}
