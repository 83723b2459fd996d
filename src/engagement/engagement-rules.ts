import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/load-config.js';
import { shippedFile } from '../shared/shipped-file.js';
import { checkCidr, NetworkList } from './network-list.js';

/**
 * The data the engagement classifier works from: user-agent patterns and networks of machines
 * that fetch pixels and follow links (config/engagement/, documented in docs/engagement.md).
 * Read once at start from files shipped with mailsvc (or an operator's copy), never fetched:
 * a release updates them, and a bad line stops the start with its file and line number.
 */

/** What an open or click was; one place. `proxy` is a mailbox provider fetching on its user's open. */
export type EngagementClass = 'human' | 'apple_mpp' | 'proxy' | 'scanner';
/** Classes a rule in the data files can name. */
type MachineClass = Exclude<EngagementClass, 'human'>;
const RULE_CLASSES: readonly MachineClass[] = ['apple_mpp', 'proxy', 'scanner'];

/** Apple's Mail Privacy Protection and scanners act without the person; a proxy fetches on the person's open. */
export const isMachine = (c: EngagementClass): boolean => c === 'apple_mpp' || c === 'scanner';

interface AgentRule {
  class: MachineClass;
  /** Who the rule is about (`gmail`, `barracuda`): shown as `classified_by`. */
  who: string;
  pattern: RegExp;
}

interface Timing {
  /** A click sooner than this after delivery is a scanner's: nobody reads and clicks that fast. */
  clickAfterDeliveryMs: number;
  /** Clicks on different links of one message closer together than this are a scanner's. */
  burstMs: number;
}

export interface EngagementRules {
  agents: AgentRule[];
  /** Labels are `<class>:<who>`. */
  networks: NetworkList;
  timing: Timing;
}

class RulesError extends Error {}

const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((raw, i) => ({ line: i + 1, text: raw.trim() }))
    .filter((l) => l.text !== '' && !l.text.startsWith('#'));

const ruleClass = (value: string | undefined, where: string): MachineClass => {
  if (!RULE_CLASSES.includes(value as MachineClass))
    throw new RulesError(`${where}: the class must be one of ${RULE_CLASSES.join(', ')}, got "${value ?? ''}"`);
  return value as MachineClass;
};

/** `agents.txt`: `<class> <who> <regular expression, to the end of the line>`, matched without regard to case. */
export function parseAgentRules(text: string, file = 'agents.txt'): AgentRule[] {
  return lines(text).map(({ line, text: l }) => {
    const m = /^(\S+)\s+(\S+)\s+(.+)$/.exec(l);
    const where = `${file}:${line}`;
    if (!m) throw new RulesError(`${where}: expected "<class> <who> <pattern>"`);
    try {
      return { class: ruleClass(m[1], where), who: m[2]!, pattern: new RegExp(m[3]!, 'i') };
    } catch (err) {
      if (err instanceof RulesError) throw err;
      throw new RulesError(`${where}: ${(err as Error).message}`);
    }
  });
}

/** `networks.txt`: `<class> <who> <CIDR>`. */
export function parseNetworkRules(text: string, file = 'networks.txt'): Array<{ cidr: string; label: string }> {
  return lines(text).map(({ line, text: l }) => {
    const where = `${file}:${line}`;
    const [cls, who, cidr, extra] = l.split(/\s+/);
    if (!cls || !who || !cidr || extra !== undefined)
      throw new RulesError(`${where}: expected "<class> <who> <network>"`);
    const bad = checkCidr(cidr);
    if (bad) throw new RulesError(`${where}: ${bad}`);
    return { cidr, label: `${ruleClass(cls, where)}:${who}` };
  });
}

/**
 * Apple's list of iCloud Private Relay egress networks, in the CSV format Apple publishes it in
 * (`<prefix>,<country>,<region>,<city>,`): Mail Privacy Protection loads images through the
 * same relays. The full file from Apple can replace the shipped one as it is.
 */
export function parseAppleEgress(text: string, file = 'apple-egress.csv'): Array<{ cidr: string; label: string }> {
  return lines(text).map(({ line, text: l }) => {
    const cidr = l.split(',')[0]!.trim();
    const bad = checkCidr(cidr);
    if (bad) throw new RulesError(`${file}:${line}: ${bad}`);
    return { cidr, label: 'apple_mpp:apple-egress' };
  });
}

/** Reads the three files from `dir` (null: the shipped ones); a problem is a one-line configuration error. */
export function loadEngagementRules(dir: string | null, timing: Timing): EngagementRules {
  try {
    return readRules(dir, timing);
  } catch (err) {
    if (err instanceof RulesError) throw new ConfigError(`config: tracking.engagementRules: ${err.message}`);
    throw err;
  }
}

function readRules(dir: string | null, timing: Timing): EngagementRules {
  const shipped = shippedFile('config/engagement/agents.txt');
  if (dir === null && !shipped) throw new RulesError('config/engagement/ is missing from the installation');
  const base = dir === null ? shipped!.slice(0, -'agents.txt'.length) : dir.endsWith('/') ? dir : `${dir}/`;
  const read = (name: string) => {
    try {
      return readFileSync(`${base}${name}`, 'utf8');
    } catch (err) {
      throw new RulesError(`cannot read ${base}${name}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  };
  return {
    agents: parseAgentRules(read('agents.txt'), `${base}agents.txt`),
    networks: new NetworkList([
      ...parseNetworkRules(read('networks.txt'), `${base}networks.txt`),
      ...parseAppleEgress(read('apple-egress.csv'), `${base}apple-egress.csv`),
    ]),
    timing,
  };
}
