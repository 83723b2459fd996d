import type { Next } from 'koa';
import { newPrefixedId } from '../../../shared/ids.js';
import { surfaceOf, type Ctx } from '../context.js';

const CLIENT_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries X-Request-Id: the client's own when it sent a sane one, else ours. */
export async function requestId(ctx: Ctx, next: Next): Promise<void> {
  const incoming = ctx.get('X-Request-Id');
  ctx.state.requestId = CLIENT_ID_RE.test(incoming) ? incoming : newPrefixedId('req_', 12);
  ctx.state.surface = surfaceOf(ctx.path);
  ctx.set('X-Request-Id', ctx.state.requestId);
  await next();
}
