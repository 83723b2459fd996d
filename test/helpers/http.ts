import { createServer, type AddressInfo } from 'node:net';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  /** Sent as-is instead of JSON.stringify(body). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

/** A real HTTP request (Node's fetch) to the server under test. */
export async function request(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | Buffer | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Asserts nothing; describes a response for assertion messages. */
export const show = (res: ApiResponse): string => `${res.status} ${res.text.slice(0, 500)}`;

/** A free loopback port, for a server whose http.publicUrl must name its own address before it starts. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A signed token or link with its last character changed: always a different string, so always a forgery. */
export const tampered = (token: string): string => `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
