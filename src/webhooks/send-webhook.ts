import { performance } from 'node:perf_hooks';
import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { NetworkPolicyError, type NetworkPolicy } from '../shared/network-policy.js';
import { RequestTimeoutError, safeRequest } from '../shared/safe-request.js';
import type { WebhookSurface } from '../store/webhooks.js';
import { renderEnvelope, type EventToRender } from './render-event.js';
import { legacyHeaders, standardHeaders } from './sign.js';

/** Bytes of a response read; the first RESPONSE_EXCERPT characters are kept. */
const MAX_RESPONSE_BYTES = 16 * 1024;
const RESPONSE_EXCERPT = 1024;
const USER_AGENT = 'mailsvc-webhooks/1';

interface WebhookMessage {
  surface: WebhookSurface;
  url: string;
  /** The delivery id: `webhook-id`, the same on every attempt of this delivery. */
  messageId: string;
  event: EventToRender;
  /** Current secret first, then a rotated-out one still inside its window. */
  secrets: readonly string[];
  /** Unix seconds, for the signature. */
  timestamp: number;
}

/** What one attempt came to: a result to record, never an exception. */
export interface AttemptResult {
  succeeded: boolean;
  /** HTTP status, or null when no response came. */
  statusCode: number | null;
  durationMs: number;
  /** Why there was no usable answer (timeout, refused address, network error), else null. */
  error: string | null;
  /** The start of the response body. */
  response: string | null;
}

interface SendOptions {
  policy: NetworkPolicy;
  timeoutMs: number;
  agents?: { http?: HttpAgent; https?: HttpsAgent };
  signal?: AbortSignal;
}

/** The exact bytes sent and the headers that sign them; pure. */
function buildRequest(message: WebhookMessage): { body: Buffer; headers: Record<string, string> } {
  const body = Buffer.from(JSON.stringify(renderEnvelope(message.surface, message.event)), 'utf8');
  const signing = { secrets: message.secrets, timestamp: message.timestamp, body };
  const signature =
    message.surface === 'legacy'
      ? legacyHeaders({ ...signing, eventType: message.event.type })
      : standardHeaders({ ...signing, messageId: message.messageId });
  return { body, headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signature } };
}

// PostgreSQL text cannot hold NUL; an excerpt is for reading, so control characters go too.
const excerpt = (body: Buffer): string =>
  body
    .toString('utf8')
    .slice(0, RESPONSE_EXCERPT)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

function describeFailure(err: unknown): string {
  if (err instanceof NetworkPolicyError) return `refused: ${err.message}`;
  if (err instanceof RequestTimeoutError) return `timeout: ${err.message}`;
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOTFOUND') return 'dns: the host does not resolve';
  if (e?.name === 'AbortError') return 'aborted';
  return `${e?.code ?? 'error'}: ${e?.message ?? String(err)}`.slice(0, 500);
}

/** POSTs one signed webhook; any 2xx is a success, anything else (3xx included) a failure. */
export async function sendWebhook(message: WebhookMessage, options: SendOptions): Promise<AttemptResult> {
  const { body, headers } = buildRequest(message);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const res = await safeRequest(message.url, {
      policy: options.policy,
      method: 'POST',
      headers,
      body,
      timeoutMs: options.timeoutMs,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      ...(options.agents ? { agents: options.agents } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const succeeded = res.status >= 200 && res.status < 300;
    return {
      succeeded,
      statusCode: res.status,
      durationMs: elapsed(),
      error: res.status >= 300 && res.status < 400 ? 'redirects are not followed' : null,
      response: excerpt(res.body),
    };
  } catch (err) {
    return { succeeded: false, statusCode: null, durationMs: elapsed(), error: describeFailure(err), response: null };
  }
}
