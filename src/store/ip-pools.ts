import type { Db } from './infra/db.js';
import type { IpPool, IpPoolAddress } from './tables.js';

/** A pool with its addresses in order. */
export interface IpPoolRow extends IpPool {
  addresses: IpPoolAddress[];
}

const withAddresses = async (db: Db, pools: IpPool[]): Promise<IpPoolRow[]> => {
  if (pools.length === 0) return [];
  const addresses = await db
    .selectFrom('ip_pool_addresses')
    .selectAll()
    .where(
      'pool_id',
      'in',
      pools.map((p) => p.id),
    )
    .orderBy('pool_id')
    .orderBy('position')
    .execute();
  return pools.map((p) => ({ ...p, addresses: addresses.filter((a) => a.pool_id === p.id) }));
};

export const listIpPools = async (db: Db): Promise<IpPoolRow[]> =>
  withAddresses(db, await db.selectFrom('ip_pools').selectAll().orderBy('name').execute());

export async function findIpPool(db: Db, idOrName: string): Promise<IpPoolRow | undefined> {
  const pool = await db
    .selectFrom('ip_pools')
    .selectAll()
    .where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)]))
    .executeTakeFirst();
  return pool ? (await withAddresses(db, [pool]))[0] : undefined;
}

/** Writes the pool and replaces its addresses, in one transaction. */
export async function saveIpPool(
  db: Db,
  pool: IpPool,
  addresses: Array<{ address: string; ehlo: string }> | undefined,
  isNew: boolean,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (isNew) await trx.insertInto('ip_pools').values(pool).execute();
    else
      await trx
        .updateTable('ip_pools')
        .set({ name: pool.name, updated_at: pool.updated_at })
        .where('id', '=', pool.id)
        .execute();
    if (!addresses) return;
    await trx.deleteFrom('ip_pool_addresses').where('pool_id', '=', pool.id).execute();
    if (addresses.length > 0) {
      await trx
        .insertInto('ip_pool_addresses')
        .values(addresses.map((a, position) => ({ pool_id: pool.id, address: a.address, ehlo: a.ehlo, position })))
        .execute();
    }
  });
}

export async function deleteIpPool(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('ip_pool_addresses').where('pool_id', '=', id).execute();
    await trx.deleteFrom('ip_pools').where('id', '=', id).execute();
  });
}

/** What still sends through the pool: domains and workspaces that name it, mail not yet delivered. */
export async function ipPoolUsers(
  db: Db,
  id: string,
): Promise<{ domains: number; workspaces: number; waiting: number }> {
  const count = async (q: Promise<{ n: number | string | bigint } | undefined>) => Number((await q)?.n ?? 0);
  const [domains, workspaces, waiting] = await Promise.all([
    count(
      db
        .selectFrom('domains')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('ip_pool_id', '=', id)
        .executeTakeFirst() as Promise<{ n: number }>,
    ),
    count(
      db
        .selectFrom('workspaces')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('ip_pool_id', '=', id)
        .executeTakeFirst() as Promise<{ n: number }>,
    ),
    count(
      db
        .selectFrom('emails')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('ip_pool_id', '=', id)
        .where('status', 'in', ['scheduled', 'queued', 'sending', 'deferred', 'held'])
        .executeTakeFirst() as Promise<{ n: number }>,
    ),
  ]);
  return { domains, workspaces, waiting };
}
