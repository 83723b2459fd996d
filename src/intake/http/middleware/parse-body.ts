import parse from 'co-body';
import type { Next } from 'koa';
import type { ByteBudget } from '../../../shared/byte-budget.js';
import { AppError } from '../../../shared/errors.js';
import { jsonDepth } from '../../../shared/json-depth.js';
import type { Ctx } from '../context.js';

/**
 * Objects and arrays in a request body nest at most this deep (the body's own object or array
 * is level 1). Far more than any request needs; deeper bodies would reach code that walks
 * JSON recursively (serialising, hashing) and overflow its stack.
 */
export const MAX_BODY_DEPTH = 64;

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const hasBody = (ctx: Ctx): boolean =>
  ctx.get('Transfer-Encoding') !== '' || (ctx.request.length !== undefined && ctx.request.length > 0);

/**
 * Reads a JSON body up to `limit` bytes into ctx.state.body (and its raw text, which
 * idempotency compares). Bodies are JSON only: anything else is a 415, a broken document a
 * 400, an oversized one a 413, one nested deeper than MAX_BODY_DEPTH a 400, each in the
 * surface's envelope. Routes marked `multipart` read their body themselves. With a `budget`,
 * a large body (LARGE_MESSAGE and over) is read only once its length fits in it (a body of
 * unknown length counts as `limit`), and holds it until the request is answered: a JSON body
 * costs about twice its size of the main thread's heap as text and parsed, and its message as
 * much again, so many at once would otherwise grow the heap past its limit.
 */
export function parseBody(limit: number, takesMultipart: (ctx: Ctx) => boolean = () => false, budget?: ByteBudget) {
  return async function parseBodyMiddleware(ctx: Ctx, next: Next): Promise<void> {
    ctx.state.body = undefined;
    ctx.state.rawBody = undefined;
    if (!WITH_BODY.has(ctx.method) || !hasBody(ctx)) return next();
    // An upload route streams its own body (a file may be far larger than `limit`) and says
    // what it takes.
    if (takesMultipart(ctx)) return next();
    if (!ctx.is('application/json', '+json')) {
      throw new AppError('unsupported_media_type', 'Request body must be JSON: send Content-Type: application/json');
    }
    // Over the limit: refused at once below (413), without waiting for room.
    const length = ctx.request.length ?? limit;
    const release = budget && length <= limit ? await budget.take(length) : undefined;
    try {
      return await parsed(ctx, next);
    } finally {
      release?.();
    }
  };

  async function parsed(ctx: Ctx, next: Next): Promise<void> {
    let body: { parsed: unknown; raw: string };
    try {
      body = (await parse.json(ctx.req, { limit, strict: true, returnRawBody: true })) as {
        parsed: unknown;
        raw: string;
      };
    } catch (err) {
      const e = err as { status?: number; type?: string };
      if (e.status === 413) throw new AppError('payload_too_large', `Request body is larger than ${limit} bytes`);
      if (e.status === 415) throw new AppError('unsupported_media_type', 'Unsupported Content-Encoding or charset');
      throw new AppError('validation_error', 'Request body is not valid JSON');
    }
    if (jsonDepth(body.parsed, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      throw new AppError(
        'validation_error',
        `body: objects and arrays may nest at most ${MAX_BODY_DEPTH} levels deep`,
        { field: 'body' },
      );
    }
    ctx.state.body = body.parsed;
    ctx.state.rawBody = body.raw;
    return next();
  }
}
