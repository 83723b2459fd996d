import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyEngagement, type Fetch } from '../../../src/engagement/classify-engagement.js';
import {
  loadEngagementRules,
  parseAgentRules,
  parseAppleEgress,
  parseNetworkRules,
} from '../../../src/engagement/engagement-rules.js';
import { NetworkList } from '../../../src/engagement/network-list.js';

/** The shipped data files, as a server loads them. */
const rules = loadEngagementRules(null, { clickAfterDeliveryMs: 10_000, burstMs: 1000 });

const CHROME =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const SAFARI_IOS =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';
const GMAIL = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
const YAHOO = 'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html';
const OUTLOOK_DESKTOP = 'Mozilla/4.0 (compatible; ms-office; MSOffice 16)';

const fetchOf = (f: Partial<Fetch>): Fetch => ({
  kind: 'open',
  method: 'GET',
  ip: '198.51.100.7',
  userAgent: CHROME,
  sinceDelivery: 3_600_000,
  sinceOtherLink: null,
  openedBySameClient: false,
  ...f,
});
const verdict = (f: Partial<Fetch>) => {
  const c = classifyEngagement(fetchOf(f), rules);
  return `${c.class} ${c.by}`;
};

describe('engagement classification', () => {
  it('one table: who fetched, from where, when → class and the rule that decided', () => {
    const table: Array<[Partial<Fetch>, string]> = [
      // People: a browser or mail client from an ordinary address, in their own time.
      [{}, 'human default'],
      [{ kind: 'click' }, 'human default'],
      [{ userAgent: OUTLOOK_DESKTOP }, 'human default'],
      // Apple Mail Privacy Protection: the bare agent, Apple's relays, Apple's own network.
      [{ userAgent: 'Mozilla/5.0', ip: '172.224.226.10' }, 'apple_mpp agent:apple-mail'],
      [{ userAgent: SAFARI_IOS, ip: '172.224.226.10' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '2a02:26f7:b3c0:4000::1' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '17.58.0.1' }, 'apple_mpp network:apple'],
      [{ userAgent: SAFARI_IOS, ip: '::ffff:104.28.1.2' }, 'apple_mpp network:apple-egress'],
      // Apple's published egress list: Akamai's 172.224–226 (not 172.227–239), Cloudflare's and Fastly's relays.
      [{ userAgent: SAFARI_IOS, ip: '172.226.43.65' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '172.227.0.1' }, 'human default'],
      [{ userAgent: SAFARI_IOS, ip: '172.239.255.1' }, 'human default'],
      [{ userAgent: SAFARI_IOS, ip: '146.75.168.84' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '140.248.40.70' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '2a04:4e41:1301:8000::1' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '2a09:bac2:8::1' }, 'apple_mpp network:apple-egress'],
      [{ userAgent: SAFARI_IOS, ip: '2606:54c0:8::1' }, 'apple_mpp network:apple-egress'],
      // …but a click through Apple's relay is a person browsing with iCloud Private Relay.
      [{ kind: 'click', userAgent: SAFARI_IOS, ip: '172.224.226.10' }, 'human default'],
      // Image proxies: a person's open, device unknown; never a click.
      [{ userAgent: GMAIL, ip: '66.249.84.1' }, 'proxy agent:gmail'],
      [{ userAgent: YAHOO }, 'proxy agent:yahoo'],
      [{ kind: 'click', userAgent: GMAIL }, 'scanner agent:gmail'],
      [{ kind: 'click', userAgent: 'Mozilla/5.0' }, 'scanner agent:apple-mail'],
      // Scanners: HEAD, no agent, their agents, their networks (opens and clicks alike).
      [{ method: 'HEAD' }, 'scanner head_request'],
      [{ kind: 'click', method: 'HEAD' }, 'scanner head_request'],
      [{ userAgent: null }, 'scanner no_user_agent'],
      [{ userAgent: '   ' }, 'scanner no_user_agent'],
      [{ userAgent: 'Barracuda Sentinel (EE)' }, 'scanner agent:barracuda'],
      [{ kind: 'click', userAgent: 'python-requests/2.31.0' }, 'scanner agent:http-library'],
      [
        {
          kind: 'click',
          userAgent:
            'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36',
        },
        'scanner agent:http-library',
      ],
      [
        { kind: 'click', userAgent: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)' },
        'scanner agent:crawler',
      ],
      [{ kind: 'click', ip: '40.107.22.15' }, 'scanner network:microsoft-eop'],
      [{ ip: '2a01:111:f400:7e00::1' }, 'scanner network:microsoft-eop'],
      [{ kind: 'click', ip: '148.163.150.2' }, 'scanner network:proofpoint'],
      // A scanner network wins over Apple's agent: the rules are in order.
      [{ userAgent: 'Mozilla/5.0', ip: '40.92.1.1' }, 'scanner network:microsoft-eop'],
      // Timing: clicks too soon after delivery, clicks on other links too close together.
      [{ kind: 'click', sinceDelivery: 9_999 }, 'scanner click_after_delivery'],
      [{ kind: 'click', sinceDelivery: 10_000 }, 'human default'],
      [{ kind: 'click', sinceDelivery: null }, 'human default'],
      [{ kind: 'click', sinceOtherLink: 999 }, 'scanner link_burst'],
      [{ kind: 'click', sinceOtherLink: 1000 }, 'human default'],
      // Timing alone never makes a scanner: a browser's open from the same client first makes a fast click a person's…
      [{ kind: 'click', sinceDelivery: 9_500, openedBySameClient: true }, 'human opened_first'],
      [{ kind: 'click', sinceDelivery: 0, openedBySameClient: true }, 'human opened_first'],
      // …and any other sign still makes a scanner.
      [{ kind: 'click', sinceDelivery: 2_000, openedBySameClient: true, method: 'HEAD' }, 'scanner head_request'],
      [
        { kind: 'click', sinceDelivery: 2_000, openedBySameClient: true, userAgent: 'Barracuda Sentinel (EE)' },
        'scanner agent:barracuda',
      ],
      [
        { kind: 'click', sinceDelivery: 2_000, openedBySameClient: true, ip: '40.107.22.15' },
        'scanner network:microsoft-eop',
      ],
      [{ kind: 'click', sinceDelivery: 2_000, openedBySameClient: true, sinceOtherLink: 999 }, 'scanner link_burst'],
      // Opens are not judged by timing: Apple and people alike open at delivery.
      [{ sinceDelivery: 100, sinceOtherLink: 10 }, 'human default'],
    ];
    for (const [f, expected] of table) assert.equal(verdict(f), expected, JSON.stringify(f));
  });

  it('timing rules switched off with 0', () => {
    const off = { ...rules, timing: { clickAfterDeliveryMs: 0, burstMs: 0 } };
    assert.equal(
      classifyEngagement(fetchOf({ kind: 'click', sinceDelivery: 0, sinceOtherLink: 0 }), off).class,
      'human',
    );
  });
});

describe('engagement data files', () => {
  it('parse the three formats, comments and blank lines skipped', () => {
    assert.deepEqual(
      parseAgentRules('# comment\n\nproxy  gmail   GoogleImageProxy\nscanner  libs  ^curl/ \n').map((r) => [
        r.class,
        r.who,
        r.pattern.source,
        r.pattern.flags,
      ]),
      [
        ['proxy', 'gmail', 'GoogleImageProxy', 'i'],
        ['scanner', 'libs', '^curl\\/', 'i'],
      ],
    );
    assert.deepEqual(parseNetworkRules('scanner eop 40.92.0.0/15\napple_mpp apple 2001:db8::/32'), [
      { cidr: '40.92.0.0/15', label: 'scanner:eop' },
      { cidr: '2001:db8::/32', label: 'apple_mpp:apple' },
    ]);
    // Apple's own format, as published.
    assert.deepEqual(
      parseAppleEgress('172.224.226.0/27,GB,GB-EN,London,\n2a02:26f7:b3c0:4000::/64,US,US-CA,Los Angeles,'),
      [
        { cidr: '172.224.226.0/27', label: 'apple_mpp:apple-egress' },
        { cidr: '2a02:26f7:b3c0:4000::/64', label: 'apple_mpp:apple-egress' },
      ],
    );
  });

  it('refuse a bad line with its file and line number', () => {
    assert.throws(
      () => parseAgentRules('proxy gmail\n', 'a.txt'),
      /^Error: a\.txt:1: expected "<class> <who> <pattern>"/,
    );
    assert.throws(
      () => parseAgentRules('# x\nrobot gmail x', 'a.txt'),
      /a\.txt:2: the class must be one of apple_mpp, proxy, scanner, got "robot"/,
    );
    assert.throws(() => parseAgentRules('scanner x (unclosed', 'a.txt'), /a\.txt:1: Invalid regular expression/);
    assert.throws(
      () => parseNetworkRules('scanner eop 40.92.0.0/33', 'n.txt'),
      /n\.txt:1: "40\.92\.0\.0\/33" is not a network/,
    );
    assert.throws(() => parseNetworkRules('scanner eop', 'n.txt'), /n\.txt:1: expected "<class> <who> <network>"/);
    assert.throws(() => parseAppleEgress('not-an-ip,US,,,', 'e.csv'), /e\.csv:1: "not-an-ip" is not a network/);
  });

  it('a missing directory is a one-line configuration error naming the key', () => {
    assert.throws(
      () => loadEngagementRules('/nonexistent/rules', rules.timing),
      /^ConfigError: config: tracking\.engagementRules: cannot read \/nonexistent\/rules\/agents\.txt: ENOENT$/,
    );
  });
});

describe('network lists', () => {
  it('find an address at the edges of its network, never outside, nested ranges included', () => {
    const list = new NetworkList([
      { cidr: '10.0.0.0/8', label: 'outer' },
      { cidr: '10.1.0.0/16', label: 'inner' },
      { cidr: '192.0.2.128/25', label: 'half' },
      { cidr: '2001:db8::/32', label: 'six' },
      { cidr: '0.0.0.0/0', label: 'any' },
    ]);
    const none = new NetworkList([{ cidr: '192.0.2.128/25', label: 'half' }]);
    assert.equal(list.find('10.1.255.255'), 'inner');
    assert.equal(list.find('10.2.0.0'), 'outer');
    assert.equal(none.find('192.0.2.127'), null);
    assert.equal(none.find('192.0.2.128'), 'half');
    assert.equal(none.find('192.0.2.255'), 'half');
    assert.equal(none.find('192.0.3.0'), null);
    assert.equal(list.find('2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'), 'six');
    assert.equal(list.find('2001:db9::'), null);
    assert.equal(list.find('255.255.255.255'), 'any');
    for (const bad of [null, '', 'localhost', '300.1.1.1']) assert.equal(list.find(bad), null);
  });

  it('looks up fast in a list the size of Apple’s', () => {
    const entries = Array.from({ length: 60_000 }, (_, i) => ({
      cidr: `172.${224 + (i >> 14)}.${(i >> 6) & 255}.${(i & 63) * 4}/30`,
      label: 'x',
    }));
    const list = new NetworkList(entries);
    // CPU time of this process, not the wall clock: other work on the machine does not count.
    const start = process.cpuUsage();
    for (let i = 0; i < 10_000; i++) list.find(`172.225.${i & 255}.${i & 255}`);
    const used = process.cpuUsage(start);
    assert.ok((used.user + used.system) / 1000 < 500, 'a lookup is a binary search');
  });
});
