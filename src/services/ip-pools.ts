import ipaddr from 'ipaddr.js';
import { AppError, notFound, validationError } from '../shared/errors.js';
import { normalizeDomain } from '../shared/domain-name.js';
import { newId } from '../shared/ids.js';
import { toIso } from '../shared/clock.js';
import { findDomainByIdOrName, updateDomain } from '../store/domains.js';
import { deleteIpPool, findIpPool, ipPoolUsers, listIpPools, saveIpPool, type IpPoolRow } from '../store/ip-pools.js';
import { updateWorkspace } from '../store/workspaces.js';
import { deleteWarmup, listWarmupCounts, listWarmups, saveWarmup } from '../store/warmups.js';
import { scheduleOf, warmupDay } from '../delivery/warmup.js';
import type { ServiceDeps } from './deps.js';

/**
 * IP pools: named sets of source addresses mail leaves from, each with the EHLO name matching
 * its PTR (docs/deliverability.md, IP pools). Instance-wide: an operator's (master key, CLI).
 * A message's pool is its own, else its sending domain's, else its workspace's, else the
 * default (the system's address, delivery.hostname).
 */

interface IpPoolAddressView {
  address: string;
  ehlo: string;
  /** Its warm-up, or null when it is warm (never warmed up, or done). */
  warmup: WarmupView | null;
}

export interface WarmupView {
  address: string;
  started_at: string;
  /** The warm-up day, from 1. */
  day: number;
  /** Messages per provider allowed today. */
  cap: number;
  /** Every day's cap, as it runs. */
  schedule: number[];
  /** Today's counts per provider (the provider, or the MX host of none). */
  sent_today: Array<{ provider: string; count: number }>;
  /** When the next warm-up day begins. */
  next_day_at: string;
}

export interface IpPoolView {
  id: string;
  name: string;
  addresses: IpPoolAddressView[];
  created_at: string;
  updated_at: string;
}

interface IpPoolInput {
  name?: string | undefined;
  addresses?: Array<{ address: string; ehlo?: string | undefined }> | undefined;
}

export interface IpPoolService {
  create(input: IpPoolInput): Promise<IpPoolView>;
  list(): Promise<IpPoolView[]>;
  get(idOrName: string): Promise<IpPoolView>;
  update(idOrName: string, input: IpPoolInput): Promise<IpPoolView>;
  /** Refused while a domain or workspace names it, or mail waits to leave through it. */
  remove(idOrName: string): Promise<IpPoolView>;
  /** The id of the pool named `name` (or with that id), for a request field: a 400 when there is none. */
  resolve(field: string, name: string): Promise<string>;
  /** The pool of a sending domain's mail (null: the workspace's). */
  setDomainPool(
    workspaceId: string,
    domain: string,
    pool: string | null,
  ): Promise<{ domain: string; ip_pool: string | null }>;
  /** The pool of a workspace's mail when neither message nor domain names one (null: the default). */
  setWorkspacePool(workspaceId: string, pool: string | null): Promise<{ workspace_id: string; ip_pool: string | null }>;
  /** Puts an address of a pool in warm-up (again from day 1), with its own schedule or the default. */
  startWarmup(address: string, schedule?: number[] | undefined): Promise<WarmupView>;
  /** Ends an address's warm-up: it sends as a warm address. */
  stopWarmup(address: string): Promise<{ address: string; warmup: null }>;
}

const MAX_POOL_ADDRESSES = 64;
/** The name that stands for no pool: the system's address. */
const DEFAULT_POOL = 'default';
const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const MAX_SCHEDULE_DAYS = 365;

function checkName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw validationError(
      'name',
      'must be 1 to 63 lower-case letters, digits, "-" or "_", starting with a letter or digit',
    );
  if (name === DEFAULT_POOL)
    throw validationError('name', '"default" is the system address (delivery.hostname); name the pool otherwise');
  return name;
}

function canonicalAddress(field: string, raw: string): string {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (!ipaddr.isValid(text)) throw validationError(field, `"${text}" is not an IPv4 or IPv6 address`);
  return ipaddr.process(text).toString();
}

/** Canonical text of an address (IPv6 compressed, IPv4-mapped IPv6 as IPv4), so one address is one entry. */
function checkAddresses(list: IpPoolInput['addresses'], defaultEhlo: string): Array<{ address: string; ehlo: string }> {
  if (!Array.isArray(list) || list.length === 0) throw validationError('addresses', 'give at least one address');
  if (list.length > MAX_POOL_ADDRESSES)
    throw validationError('addresses', `at most ${MAX_POOL_ADDRESSES} addresses per pool`);
  const seen = new Set<string>();
  return list.map((entry, i) => {
    const raw = typeof entry?.address === 'string' ? entry.address.trim() : '';
    if (!ipaddr.isValid(raw))
      throw validationError(`addresses[${i}].address`, `"${raw}" is not an IPv4 or IPv6 address`);
    const parsed = ipaddr.process(raw);
    const address = parsed.toString();
    if (parsed.range() === 'unspecified')
      throw validationError(`addresses[${i}].address`, 'must be an address of this host, not the unspecified address');
    if (seen.has(address)) throw validationError(`addresses[${i}].address`, `${address} is listed twice`);
    seen.add(address);
    const ehlo = entry.ehlo === undefined ? defaultEhlo : normalizeDomain(String(entry.ehlo));
    if (!ehlo) throw validationError(`addresses[${i}].ehlo`, 'must be a host name (the PTR name of the address)');
    return { address, ehlo };
  });
}

export function createIpPoolService(deps: ServiceDeps): IpPoolService {
  const { db, clock } = deps;
  const defaultEhlo = deps.config.delivery.hostname;
  const settings = deps.config.delivery.warmup;

  /** The warm-ups of the given addresses as they stand now, with today's counts. */
  const warmupViews = async (addresses: string[]): Promise<Map<string, WarmupView>> => {
    const now = clock.now();
    const wanted = new Set(addresses);
    const running = (await listWarmups(db))
      .filter((w) => wanted.has(w.address))
      .map((w) => ({ w, day: warmupDay(w, settings, now) }))
      .filter(({ day }) => day.cap !== null);
    const counts = await listWarmupCounts(
      db,
      running.map(({ w, day }) => ({ address: w.address, periodStart: day.periodStart })),
    );
    return new Map(
      running.map(({ w, day }) => [
        w.address,
        {
          address: w.address,
          started_at: toIso(w.started_at),
          day: day.day + 1,
          cap: day.cap!,
          schedule: scheduleOf(w.schedule, settings),
          sent_today: counts
            .filter((c) => c.address === w.address && c.period_start === day.periodStart)
            .map((c) => ({ provider: c.provider, count: c.count })),
          next_day_at: toIso(day.nextPeriod),
        },
      ]),
    );
  };

  const views = async (pools: IpPoolRow[]): Promise<IpPoolView[]> => {
    const warm = await warmupViews(pools.flatMap((p) => p.addresses.map((a) => a.address)));
    return pools.map((p) => ({
      id: p.id,
      name: p.name,
      addresses: p.addresses.map((a) => ({ address: a.address, ehlo: a.ehlo, warmup: warm.get(a.address) ?? null })),
      created_at: toIso(p.created_at),
      updated_at: toIso(p.updated_at),
    }));
  };
  const view = async (p: IpPoolRow): Promise<IpPoolView> => (await views([p]))[0]!;

  const find = async (idOrName: string): Promise<IpPoolRow> => {
    const pool = await findIpPool(db, idOrName);
    if (!pool) throw notFound(`IP pool ${idOrName}`);
    return pool;
  };
  const named = async (name: string, except?: string) => {
    const other = await findIpPool(db, name);
    if (other && other.id !== except)
      throw new AppError('already_exists', `An IP pool named ${name} already exists`, { field: 'name' });
  };

  return {
    async create(input) {
      const name = checkName(input.name);
      const addresses = checkAddresses(input.addresses, defaultEhlo);
      await named(name);
      const now = clock.now();
      const pool = { id: newId(), name, created_at: now, updated_at: now };
      await saveIpPool(db, pool, addresses, true);
      return view(await find(pool.id));
    },
    list: async () => views(await listIpPools(db)),
    get: async (idOrName) => view(await find(idOrName)),
    async update(idOrName, input) {
      const pool = await find(idOrName);
      if (input.name === undefined && input.addresses === undefined)
        throw validationError('name', 'give a name or addresses (or both)');
      const name = input.name === undefined ? pool.name : checkName(input.name);
      if (name !== pool.name) await named(name, pool.id);
      const addresses = input.addresses === undefined ? undefined : checkAddresses(input.addresses, defaultEhlo);
      await saveIpPool(
        db,
        { id: pool.id, name, created_at: pool.created_at, updated_at: clock.now() },
        addresses,
        false,
      );
      return view(await find(pool.id));
    },
    async remove(idOrName) {
      const pool = await find(idOrName);
      const users = await ipPoolUsers(db, pool.id);
      if (users.domains + users.workspaces + users.waiting > 0) {
        throw new AppError(
          'invalid_state',
          `IP pool ${pool.name} is in use (${users.domains} domain(s), ${users.workspaces} workspace(s), ${users.waiting} message(s) waiting to leave through it): move them to another pool first`,
        );
      }
      const removed = await view(pool);
      await deleteIpPool(db, pool.id);
      return removed;
    },
    async resolve(field, name) {
      const pool = typeof name === 'string' && name !== '' ? await findIpPool(db, name) : undefined;
      if (!pool) throw validationError(field, `no IP pool named ${JSON.stringify(name)} (mailsvc ip-pools list)`);
      return pool.id;
    },
    async setDomainPool(workspaceId, domainName, poolName) {
      const domain = await findDomainByIdOrName(db, workspaceId, domainName);
      if (!domain) throw notFound(`Domain ${domainName}`);
      const id = poolName === null || poolName === DEFAULT_POOL ? null : await this.resolve('ip_pool', poolName);
      await updateDomain(db, domain.id, { ip_pool_id: id });
      return { domain: domain.name, ip_pool: poolName };
    },
    async setWorkspacePool(workspaceId, poolName) {
      const id = poolName === null || poolName === DEFAULT_POOL ? null : await this.resolve('ip_pool', poolName);
      if (!(await updateWorkspace(db, workspaceId, { ip_pool_id: id }))) throw notFound(`Workspace ${workspaceId}`);
      return { workspace_id: workspaceId, ip_pool: poolName };
    },
    async startWarmup(rawAddress, schedule) {
      const address = canonicalAddress('address', rawAddress);
      if (!(await listIpPools(db)).some((p) => p.addresses.some((a) => a.address === address))) {
        throw notFound(`${address} in any IP pool (add it to a pool first)`);
      }
      if (schedule !== undefined) {
        if (
          !Array.isArray(schedule) ||
          schedule.length === 0 ||
          schedule.length > MAX_SCHEDULE_DAYS ||
          !schedule.every((n) => Number.isInteger(n) && n >= 1 && n <= 10_000_000)
        ) {
          throw validationError(
            'schedule',
            `must be 1 to ${MAX_SCHEDULE_DAYS} daily caps, each an integer from 1 to 10000000`,
          );
        }
      }
      await saveWarmup(db, { address, started_at: clock.now(), schedule: schedule ?? null });
      const started = (await warmupViews([address])).get(address);
      if (!started) throw validationError('schedule', 'the schedule ends on its first day: nothing to warm up');
      return started;
    },
    async stopWarmup(rawAddress) {
      const address = canonicalAddress('address', rawAddress);
      if (!(await deleteWarmup(db, address))) throw notFound(`Warm-up of ${address}`);
      return { address, warmup: null };
    },
  };
}
