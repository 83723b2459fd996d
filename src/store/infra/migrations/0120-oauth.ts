import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The OAuth authorization server (issue 35). `oauth_models` holds what oidc-provider keeps
 * (clients, codes, refresh tokens, sessions, interactions, its grants) as JSON payloads; every
 * model whose id is a credential is stored under the SHA-256 of that id. `oauth_grants` is a
 * person's consent as the product shows it (client, user, workspace, scopes), and every `oat_`
 * access token belongs to one: tokens minted by `mailsvc tokens create` get a grant of their own
 * (no client, no user), those issued at the token endpoint the grant the person approved.
 */
export const oauth = (): Migration => ({
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('oauth_models')
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('grant_id', 'text')
      .addColumn('uid', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint')
      .addColumn('consumed_at', 'bigint')
      .addPrimaryKeyConstraint('oauth_models_pk', ['model', 'id'])
      .execute();
    await db.schema.createIndex('oauth_models_grant').on('oauth_models').column('grant_id').execute();
    await db.schema.createIndex('oauth_models_uid').on('oauth_models').columns(['model', 'uid']).execute();
    await db.schema.createIndex('oauth_models_expiry').on('oauth_models').column('expires_at').execute();
    await db.schema
      .createTable('oauth_grants')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('provider_grant_id', 'text', (c) => c.unique())
      .addColumn('client_id', 'text')
      .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('scopes', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint')
      .addColumn('revoked_at', 'bigint')
      .execute();
    await db.schema.createIndex('oauth_grants_workspace').on('oauth_grants').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('oauth_grants_user').on('oauth_grants').column('user_id').execute();
    await db.schema.alterTable('credentials').addColumn('grant_id', 'text').execute();
    await db.schema.createIndex('credentials_grant').on('credentials').column('grant_id').execute();
    // Tokens minted before: each becomes a grant of its own, under the token's id.
    await sql`INSERT INTO oauth_grants (id, workspace_id, provider_grant_id, client_id, user_id, name, scopes, created_at, expires_at, revoked_at)
      SELECT id, workspace_id, NULL, NULL, NULL, name, COALESCE(scopes, '[]'), created_at, expires_at, revoked_at FROM credentials WHERE kind = 'oauth' AND workspace_id IS NOT NULL`.execute(
      db,
    );
    await sql`UPDATE credentials SET grant_id = id WHERE kind = 'oauth' AND workspace_id IS NOT NULL`.execute(db);
  },
  async down(db: Kysely<any>) {
    await db.schema.dropIndex('credentials_grant').execute();
    await db.schema.alterTable('credentials').dropColumn('grant_id').execute();
    await db.schema.dropTable('oauth_grants').execute();
    await db.schema.dropTable('oauth_models').execute();
  },
});
