import type { ExpressionBuilder, Selectable } from 'kysely';
import type { Dialect } from './infra/dialect.js';
import { matchesAll, type PropertyCondition } from './property-conditions.js';
import { jsonOrNull, rowCodec, type EntityOf } from './infra/row-codec.js';
import type { Database } from './tables/database.js';
import type { AudiencesTable } from './tables/subscribers.js';

export const audienceRows = rowCodec<Selectable<AudiencesTable>>()({ conditions: jsonOrNull<PropertyCondition[]>() });
/** An audience (Resend's segment): contacts added to it, and those meeting its conditions (null: none). */
export type Audience = EntityOf<typeof audienceRows>;

export type Membership = Pick<Audience, 'id' | 'conditions'>;

/**
 * Whether the `subscribers` row is a member: added to the audience, or meeting its conditions
 * on contact properties (when it has some).
 */
export function isMember(eb: ExpressionBuilder<Database, 'subscribers'>, dialect: Dialect, audience: Membership) {
  const added = eb.exists(
    eb
      .selectFrom('audience_members')
      .select('audience_members.subscriber_id')
      .whereRef('audience_members.subscriber_id', '=', 'subscribers.id')
      .where('audience_members.audience_id', '=', audience.id),
  );
  const conditions = audience.conditions ?? [];
  return conditions.length === 0 ? added : eb.or([added, matchesAll(dialect, conditions)]);
}
