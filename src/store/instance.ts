import type { Db } from './infra/db.js';

/** A fact about the database itself, or undefined. */
export const findInstanceValue = async (db: Db, key: string): Promise<string | undefined> =>
  (await db.selectFrom('instance').select('value').where('key', '=', key).executeTakeFirst())?.value;

/** Writes a fact unless one is there already (the first node to start wins); returns the value that stands. */
export async function saveInstanceValueOnce(db: Db, key: string, value: string, now: number): Promise<string> {
  await db
    .insertInto('instance')
    .values({ key, value, created_at: now })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  return (await findInstanceValue(db, key))!;
}

/** One secret sealed before there was a check value: a DKIM key or a webhook secret, if any. */
export async function findAnySealedSecret(db: Db): Promise<string | undefined> {
  const dkim = await db.selectFrom('dkim_keys').select('private_key_sealed as sealed').limit(1).executeTakeFirst();
  if (dkim) return dkim.sealed;
  return (await db.selectFrom('webhook_endpoints').select('secret_sealed as sealed').limit(1).executeTakeFirst())
    ?.sealed;
}
