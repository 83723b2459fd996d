import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { json, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { OAuthGrantsTable, OAuthModelsTable } from './tables/oauth.js';

/** oidc-provider's models (clients, codes, refresh tokens, sessions…) and the grants people approved. */

const modelRows = rowCodec<Selectable<OAuthModelsTable>>()({ payload: json<Record<string, unknown>>() });
type OAuthModel = EntityOf<typeof modelRows>;

const grantRows = rowCodec<Selectable<OAuthGrantsTable>>()({ scopes: json<string[]>() });
type OAuthGrant = EntityOf<typeof grantRows>;
/** A grant as lists show it: with its client's name now and when one of its tokens was last used. */
export type ListedGrant = OAuthGrant & { last_used_at: number | null };

export const upsertOAuthModel = async (db: Db, model: OAuthModel): Promise<void> => {
  const row = modelRows.encode(model);
  await db
    .insertInto('oauth_models')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['model', 'id']).doUpdateSet({
        payload: row.payload,
        grant_id: row.grant_id,
        uid: row.uid,
        expires_at: row.expires_at,
        consumed_at: row.consumed_at,
      }),
    )
    .execute();
};

export const findOAuthModel = async (db: Db, model: string, id: string): Promise<OAuthModel | undefined> => {
  const row = await db
    .selectFrom('oauth_models')
    .selectAll()
    .where('model', '=', model)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && modelRows.decode(row);
};

export const findOAuthModelByUid = async (db: Db, model: string, uid: string): Promise<OAuthModel | undefined> => {
  const row = await db
    .selectFrom('oauth_models')
    .selectAll()
    .where('model', '=', model)
    .where('uid', '=', uid)
    .executeTakeFirst();
  return row && modelRows.decode(row);
};

export const listOAuthModels = async (db: Db, model: string): Promise<OAuthModel[]> =>
  modelRows.decodeAll(
    await db
      .selectFrom('oauth_models')
      .selectAll()
      .where('model', '=', model)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute(),
  );

/** Marks a code or refresh token used, once: false when it already was. */
export const consumeOAuthModel = async (db: Db, model: string, id: string, at: number): Promise<boolean> => {
  const result = await db
    .updateTable('oauth_models')
    .set({ consumed_at: at })
    .where('model', '=', model)
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
};

export const deleteOAuthModel = async (db: Db, model: string, id: string): Promise<boolean> => {
  const result = await db.deleteFrom('oauth_models').where('model', '=', model).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
};

/** Everything oidc-provider issued under one of its grants (codes, refresh tokens, the grant itself). */
export const deleteOAuthModelsOfGrant = async (db: Db, providerGrantId: string): Promise<void> => {
  await db
    .deleteFrom('oauth_models')
    .where((eb) =>
      eb.or([
        eb('grant_id', '=', providerGrantId),
        eb.and([eb('model', '=', 'Grant'), eb('id', '=', providerGrantId)]),
      ]),
    )
    .execute();
};

export const deleteExpiredOAuthModels = async (db: Db, now: number): Promise<number> => {
  const result = await db.deleteFrom('oauth_models').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
};

export const saveOAuthGrant = async (db: Db, grant: OAuthGrant): Promise<void> => {
  await db.insertInto('oauth_grants').values(grantRows.encode(grant)).execute();
};

export const findOAuthGrant = async (db: Db, id: string): Promise<OAuthGrant | undefined> => {
  const row = await db.selectFrom('oauth_grants').selectAll().where('id', '=', id).executeTakeFirst();
  return row && grantRows.decode(row);
};

export const findOAuthGrantByProviderId = async (db: Db, providerGrantId: string): Promise<OAuthGrant | undefined> => {
  const row = await db
    .selectFrom('oauth_grants')
    .selectAll()
    .where('provider_grant_id', '=', providerGrantId)
    .executeTakeFirst();
  return row && grantRows.decode(row);
};

export interface GrantFilter {
  workspaceId?: string | undefined;
  userId?: string | undefined;
  clientId?: string | undefined;
}

const listedGrants = (db: Db) =>
  db
    .selectFrom('oauth_grants')
    .selectAll('oauth_grants')
    .select((eb) =>
      eb
        .selectFrom('credentials')
        .whereRef('credentials.grant_id', '=', 'oauth_grants.id')
        .select((e) => e.fn.max('credentials.last_used_at').as('m'))
        .as('last_used_at'),
    );

const decodeListed = <R extends Selectable<OAuthGrantsTable> & { last_used_at: unknown }>(r: R): ListedGrant => ({
  ...grantRows.decode(r),
  last_used_at: r.last_used_at === null ? null : Number(r.last_used_at),
});

/** A page of grants, newest first (ids are UUIDv7), each with the last use of any of its tokens. */
export async function listOAuthGrantPage(db: Db, filter: GrantFilter, page: ListPage): Promise<PageOf<ListedGrant>> {
  let q = listedGrants(db);
  if (filter.workspaceId !== undefined) q = q.where('oauth_grants.workspace_id', '=', filter.workspaceId);
  if (filter.userId !== undefined) q = q.where('oauth_grants.user_id', '=', filter.userId);
  if (filter.clientId !== undefined) q = q.where('oauth_grants.client_id', '=', filter.clientId);
  const { rows, more } = await readPage(q, 'oauth_grants.id', page);
  return { rows: rows.map(decodeListed), more };
}

export const findListedOAuthGrant = async (db: Db, id: string): Promise<ListedGrant | undefined> => {
  const row = await listedGrants(db).where('oauth_grants.id', '=', id).executeTakeFirst();
  return row && decodeListed(row);
};

/**
 * Ends a grant: the grant, every access token issued under it and, for a person's grant,
 * everything oidc-provider keeps of it (refresh tokens, codes), in one transaction. False when
 * it was already revoked.
 */
export async function revokeOAuthGrant(db: Db, id: string, at: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('oauth_grants')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .returning('provider_grant_id')
      .executeTakeFirst();
    if (!result) return false;
    await trx
      .updateTable('credentials')
      .set({ revoked_at: at })
      .where('grant_id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    if (result.provider_grant_id !== null) await deleteOAuthModelsOfGrant(trx, result.provider_grant_id);
    return true;
  });
}

/** The grant ids of one client's grants still in force (a client removed ends them all). */
export const activeGrantIdsOfClient = async (db: Db, clientId: string): Promise<string[]> =>
  (
    await db
      .selectFrom('oauth_grants')
      .select('id')
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .execute()
  ).map((r) => r.id);

/** Revokes the access tokens issued under a grant (the authorization server ending its tokens, the grant row kept). */
export const revokeCredentialsOfGrant = async (db: Db, grantId: string, at: number): Promise<void> => {
  await db
    .updateTable('credentials')
    .set({ revoked_at: at })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
};

/** Revokes one access token by the hash of its secret (oidc-provider revoking or expiring it). */
export const revokeCredentialByHash = async (db: Db, secretHash: string, at: number): Promise<void> => {
  await db
    .updateTable('credentials')
    .set({ revoked_at: at })
    .where('secret_hash', '=', secretHash)
    .where('revoked_at', 'is', null)
    .execute();
};
