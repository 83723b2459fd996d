/**
 * The one error model. Services throw `AppError`; each surface (versioned HTTP, legacy HTTP,
 * SMTP, CLI) renders it in its own envelope. The catalog below is the single list of codes:
 * the versioned `error.code`, the legacy `code`, the HTTP status, the SMTP reply code and
 * whether retrying the same request can succeed.
 */

interface ErrorKind {
  status: number;
  legacyCode: string;
  smtpCode: number;
  retryable: boolean;
}

export const errorCatalog = {
  validation_error: { status: 400, legacyCode: 'VALIDATION_ERROR', smtpCode: 501, retryable: false },
  unauthorized: { status: 401, legacyCode: 'UNAUTHORIZED', smtpCode: 535, retryable: false },
  forbidden: { status: 403, legacyCode: 'FORBIDDEN', smtpCode: 550, retryable: false },
  not_found: { status: 404, legacyCode: 'NOT_FOUND', smtpCode: 550, retryable: false },
  method_not_allowed: { status: 405, legacyCode: 'METHOD_NOT_ALLOWED', smtpCode: 502, retryable: false },
  already_exists: { status: 409, legacyCode: 'ALREADY_EXISTS', smtpCode: 550, retryable: false },
  invalid_state: { status: 409, legacyCode: 'INVALID_STATE', smtpCode: 550, retryable: false },
  invalid_idempotent_request: { status: 409, legacyCode: 'INVALID_IDEMPOTENT_REQUEST', smtpCode: 550, retryable: false },
  concurrent_idempotent_requests: { status: 409, legacyCode: 'CONCURRENT_IDEMPOTENT_REQUESTS', smtpCode: 451, retryable: true },
  payload_too_large: { status: 413, legacyCode: 'PAYLOAD_TOO_LARGE', smtpCode: 552, retryable: false },
  unsupported_media_type: { status: 415, legacyCode: 'UNSUPPORTED_MEDIA_TYPE', smtpCode: 554, retryable: false },
  rate_limited: { status: 429, legacyCode: 'RATE_LIMITED', smtpCode: 451, retryable: true },
  internal_error: { status: 500, legacyCode: 'INTERNAL_ERROR', smtpCode: 451, retryable: true },
  service_unavailable: { status: 503, legacyCode: 'SERVICE_UNAVAILABLE', smtpCode: 421, retryable: true },
} as const satisfies Record<string, ErrorKind>;

export type ErrorCode = keyof typeof errorCatalog;

export interface ErrorOptions {
  /** The request field the error is about, e.g. `to` or `attachments[1].content`. */
  field?: string;
  /** Seconds after which a retry may succeed (rendered as Retry-After). */
  retryAfter?: number;
  /** The rate-limit window a 429 refers to (rendered as X-RateLimit-* headers). */
  rateLimit?: { limit: number; remaining: number; resetAt: number };
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly retryAfter: number | undefined;
  readonly rateLimit: ErrorOptions['rateLimit'];

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.field = options.field;
    this.retryAfter = options.retryAfter;
    this.rateLimit = options.rateLimit;
  }

  get status(): number {
    return errorCatalog[this.code].status;
  }
  get legacyCode(): string {
    return errorCatalog[this.code].legacyCode;
  }
  get smtpCode(): number {
    return errorCatalog[this.code].smtpCode;
  }
  get retryable(): boolean {
    return errorCatalog[this.code].retryable;
  }
}

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;

/** Anything that is not an AppError is a bug or an outage: it becomes a generic 500 with no detail. */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  return new AppError('internal_error', 'Internal server error, try again later', { cause: err });
}

export const validationError = (field: string, message: string): AppError =>
  new AppError('validation_error', `${field}: ${message}`, { field });

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);
