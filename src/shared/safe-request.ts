import { request as httpRequest, type Agent as HttpAgent, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import { NetworkPolicyError, parsePolicyUrl, pinnedLookup, type NetworkPolicy } from './network-policy.js';

/**
 * One outbound HTTP request to a URL a customer gave us, under the network policy: the URL's
 * form is checked, every connection's address is resolved through our resolver, checked and
 * pinned (see `pinnedLookup`), redirects are followed only when asked and re-checked hop by
 * hop, the whole exchange has one deadline and the response body is read up to a cap.
 */

interface SafeRequestOptions {
  policy: NetworkPolicy;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Deadline for the whole exchange, redirects included. */
  timeoutMs: number;
  /** Bytes of response body kept; the rest is discarded (and the connection closed). */
  maxResponseBytes: number;
  /** Redirects followed (default 0: a 3xx is returned as the response). */
  maxRedirects?: number;
  /** Keep-alive agents to reuse connections; sockets in them were checked when opened. */
  agents?: { http?: HttpAgent; https?: HttpsAgent };
  signal?: AbortSignal;
}

interface SafeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** True when the body was longer than maxResponseBytes. */
  truncated: boolean;
  /** The URL that answered (after redirects). */
  url: string;
}

export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(ms: number) {
    super(`no answer within ${Math.round(ms / 1000)} s`);
    this.name = 'RequestTimeoutError';
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

interface Hop {
  method: string;
  body: string | Buffer | undefined;
}

function once(url: URL, hop: Hop, options: SafeRequestOptions, signal: AbortSignal): Promise<SafeResponse> {
  return new Promise<SafeResponse>((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const headers: Record<string, string> = { ...options.headers };
    if (hop.body !== undefined) headers['content-length'] = String(Buffer.byteLength(hop.body));
    else delete headers['content-length'];
    const req = (secure ? httpsRequest : httpRequest)(url, {
      method: hop.method,
      headers,
      lookup: pinnedLookup(options.policy),
      agent: (secure ? options.agents?.https : options.agents?.http) ?? undefined,
      signal,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      let truncated = false;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          truncated,
          url: url.href,
        });
      };
      res.on('data', (chunk: Buffer) => {
        const room = options.maxResponseBytes - kept;
        if (chunk.length <= room) {
          chunks.push(chunk);
          kept += chunk.length;
          return;
        }
        if (room > 0) chunks.push(chunk.subarray(0, room));
        kept = options.maxResponseBytes;
        truncated = true;
        finish();
        // Nothing more will be read: close the connection rather than drain an unbounded body.
        res.destroy();
      });
      res.on('end', finish);
      res.on('close', () => {
        if (done) return;
        if (res.complete) finish();
        else reject(Object.assign(new Error('connection closed before the response ended'), { code: 'ECONNRESET' }));
      });
    });
    req.end(hop.body);
  });
}

export async function safeRequest(input: string | URL, options: SafeRequestOptions): Promise<SafeResponse> {
  const controller = new AbortController();
  let timeout: RequestTimeoutError | undefined;
  const timer = setTimeout(
    () => controller.abort((timeout = new RequestTimeoutError(options.timeoutMs))),
    options.timeoutMs,
  );
  const onAbort = () => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let url = parsePolicyUrl(String(input), options.policy);
    let hop: Hop = { method: options.method ?? 'GET', body: options.body };
    for (let redirects = 0; ; redirects++) {
      const follow = redirects < (options.maxRedirects ?? 0);
      let response: SafeResponse;
      try {
        response = await once(url, hop, options, controller.signal);
      } catch (err) {
        if (timeout !== undefined && controller.signal.reason === timeout) throw timeout;
        throw err;
      }
      const location = response.headers.location;
      if (!follow || !REDIRECTS.has(response.status) || !location) return response;
      if (!URL.canParse(location, url.href)) throw new NetworkPolicyError('redirect to an invalid URL');
      url = parsePolicyUrl(new URL(location, url).href, options.policy);
      // 303, and 301/302 after a POST, become a GET without body, as browsers do.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && hop.method === 'POST')) {
        hop = { method: 'GET', body: undefined };
      }
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
