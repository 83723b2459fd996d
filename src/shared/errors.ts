/**
 * The one error model. Services throw `AppError`; each surface (versioned HTTP, legacy HTTP,
 * SMTP, CLI) renders it in its own envelope. The catalog below is the single list of codes:
 * the versioned `error.code`, the legacy `code`, the HTTP status, the SMTP reply code and
 * whether retrying the same request can succeed.
 */

import { FAULT_REPLIES, faultOf } from './faults.js';

interface ErrorKind {
  status: number;
  legacyCode: string;
  smtpCode: number;
  /** The enhanced status code (RFC 3463) that follows `smtpCode` in an SMTP reply. */
  smtpStatus: string;
  retryable: boolean;
}

export const errorCatalog = {
  validation_error: {
    status: 400,
    legacyCode: 'VALIDATION_ERROR',
    smtpCode: 501,
    smtpStatus: '5.5.4',
    retryable: false,
  },
  unauthorized: { status: 401, legacyCode: 'UNAUTHORIZED', smtpCode: 535, smtpStatus: '5.7.8', retryable: false },
  forbidden: { status: 403, legacyCode: 'FORBIDDEN', smtpCode: 550, smtpStatus: '5.7.1', retryable: false },
  not_found: { status: 404, legacyCode: 'NOT_FOUND', smtpCode: 550, smtpStatus: '5.1.1', retryable: false },
  method_not_allowed: {
    status: 405,
    legacyCode: 'METHOD_NOT_ALLOWED',
    smtpCode: 502,
    smtpStatus: '5.5.1',
    retryable: false,
  },
  already_exists: { status: 409, legacyCode: 'ALREADY_EXISTS', smtpCode: 550, smtpStatus: '5.0.0', retryable: false },
  invalid_state: { status: 409, legacyCode: 'INVALID_STATE', smtpCode: 550, smtpStatus: '5.0.0', retryable: false },
  invalid_idempotent_request: {
    status: 409,
    legacyCode: 'INVALID_IDEMPOTENT_REQUEST',
    smtpCode: 550,
    smtpStatus: '5.0.0',
    retryable: false,
  },
  concurrent_idempotent_requests: {
    status: 409,
    legacyCode: 'CONCURRENT_IDEMPOTENT_REQUESTS',
    smtpCode: 451,
    smtpStatus: '4.0.0',
    retryable: true,
  },
  payload_too_large: {
    status: 413,
    legacyCode: 'PAYLOAD_TOO_LARGE',
    smtpCode: 552,
    smtpStatus: '5.3.4',
    retryable: false,
  },
  unsupported_media_type: {
    status: 415,
    legacyCode: 'UNSUPPORTED_MEDIA_TYPE',
    smtpCode: 554,
    smtpStatus: '5.6.0',
    retryable: false,
  },
  rate_limited: { status: 429, legacyCode: 'RATE_LIMITED', smtpCode: 451, smtpStatus: '4.7.0', retryable: true },
  internal_error: { status: 500, legacyCode: 'INTERNAL_ERROR', smtpCode: 451, smtpStatus: '4.3.0', retryable: true },
  service_unavailable: {
    status: 503,
    legacyCode: 'SERVICE_UNAVAILABLE',
    smtpCode: 421,
    smtpStatus: '4.3.2',
    retryable: true,
  },
  // Infrastructure faults (shared/faults.ts classifies them): temporary refusals on every
  // surface, so clients retry and nobody is told their request or their key was wrong.
  storage_unavailable: {
    status: 503,
    legacyCode: 'SERVICE_UNAVAILABLE',
    smtpCode: 451,
    smtpStatus: '4.3.0',
    retryable: true,
  },
  storage_full: { status: 503, legacyCode: 'SERVICE_UNAVAILABLE', smtpCode: 452, smtpStatus: '4.3.1', retryable: true },
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
  get smtpStatus(): string {
    return errorCatalog[this.code].smtpStatus;
  }
  get retryable(): boolean {
    return errorCatalog[this.code].retryable;
  }
  /** The SMTP reply text after the code: the enhanced status, then the message. */
  get smtpText(): string {
    return `${this.smtpStatus} ${this.message}`;
  }
}

export const isAppError = (err: unknown): err is AppError => err instanceof AppError;

/**
 * Anything that is not an AppError is a fault of the machine (the disk, the database: a
 * temporary refusal naming it, shared/faults.ts) or a bug (a generic 500 with no detail).
 */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  return classifyFault(err) ?? new AppError('internal_error', 'Internal server error, try again later', { cause: err });
}

/**
 * The catalog's error for a fault of the machine (shared/faults.ts), or null when `err` is
 * none. `fromDatabase`: it came out of the database driver (the store's edge), so a network
 * error is the database's.
 */
export function classifyFault(err: unknown, fromDatabase = false): AppError | null {
  if (isAppError(err)) return err.code === 'storage_full' || err.code === 'storage_unavailable' ? err : null;
  const kind = faultOf(err, fromDatabase);
  if (!kind) return null;
  const { message, retryAfter } = FAULT_REPLIES[kind];
  return new AppError(kind === 'disk_full' ? 'storage_full' : 'storage_unavailable', message, {
    retryAfter,
    cause: err,
  });
}

/** True for the faults of the machine beneath us: worth waiting out and retrying, never a client's mistake. */
export const isFault = (err: unknown): boolean => classifyFault(err) !== null;

export const validationError = (field: string, message: string): AppError =>
  new AppError('validation_error', `${field}: ${message}`, { field });

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);
