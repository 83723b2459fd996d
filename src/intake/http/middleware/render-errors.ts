import type { Next } from 'koa';
import { AppError, isFault, toAppError, type ErrorCode } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { Ctx } from '../context.js';
import { setRateLimitHeaders } from '../rate-limit.js';

/** Errors thrown below us by Koa, co-body or the router carry an HTTP status; map it to our catalog. */
const byStatus: Record<number, ErrorCode> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

export function normalize(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const status = (err as { status?: unknown; expose?: unknown })?.status;
  if (typeof status === 'number' && byStatus[status] && (err as { expose?: unknown }).expose) {
    return new AppError(byStatus[status], (err as Error).message, { cause: err });
  }
  return toAppError(err);
}

/**
 * The error names of Resend's API for our codes: the Resend SDK hands the whole error body to
 * the application as `error`, and applications read `name`, `message` and `statusCode`.
 */
export const RESEND_ERROR_NAMES: Record<ErrorCode, string> = {
  validation_error: 'validation_error',
  unauthorized: 'invalid_api_key',
  forbidden: 'invalid_access',
  not_found: 'not_found',
  method_not_allowed: 'method_not_allowed',
  already_exists: 'validation_error',
  invalid_state: 'validation_error',
  invalid_idempotent_request: 'invalid_idempotent_request',
  concurrent_idempotent_requests: 'concurrent_idempotent_requests',
  payload_too_large: 'validation_error',
  unsupported_media_type: 'validation_error',
  rate_limited: 'rate_limit_exceeded',
  internal_error: 'internal_server_error',
  service_unavailable: 'application_error',
  storage_unavailable: 'application_error',
  storage_full: 'application_error',
};

/**
 * The versioned envelope: `{request_id, error: {code, message, retryable}}` (SPEC), with
 * Resend's `name`, `message` and `statusCode` beside it.
 */
export const versionedBody = (requestId: string, err: AppError) => ({
  request_id: requestId,
  error: { code: err.code, message: err.message, retryable: err.retryable },
  name: RESEND_ERROR_NAMES[err.code],
  message: err.message,
  statusCode: err.status,
});

/** The legacy envelope: `{success:false, error, code}`; on 429 also `message` (SPEC Errors). */
export const legacyBody = (err: AppError) =>
  err.code === 'rate_limited'
    ? { success: false, error: 'Rate limit exceeded', message: err.message, code: err.legacyCode }
    : { success: false, error: err.message, code: err.legacyCode };

/**
 * Renders every failure in the envelope of the surface the request came in on. Unknown
 * errors become a 500 with no detail for the client and the full error in the log.
 */
export function renderErrors(logger: Logger) {
  return async function renderErrorsMiddleware(ctx: Ctx, next: Next): Promise<void> {
    try {
      await next();
    } catch (thrown) {
      const err = normalize(thrown);
      if (err.code === 'internal_error') {
        logger.error(
          { err: err.cause ?? thrown, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path },
          'request failed',
        );
      } else if (isFault(err)) {
        logger.warn(
          {
            code: err.code,
            cause: (err.cause as Error | undefined)?.message,
            requestId: ctx.state.requestId,
            method: ctx.method,
            path: ctx.path,
          },
          'request refused: storage fault',
        );
      }
      ctx.status = err.status;
      if (err.retryAfter !== undefined) ctx.set('Retry-After', String(err.retryAfter));
      if (err.rateLimit) setRateLimitHeaders(ctx, err.rateLimit);
      ctx.body = ctx.state.surface === 'legacy' ? legacyBody(err) : versionedBody(ctx.state.requestId, err);
    }
  };
}
