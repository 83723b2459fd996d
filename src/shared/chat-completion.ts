import type { DnsResolver } from './dns.js';
import { safeRequest } from './safe-request.js';

/** The operator's OpenAI-compatible endpoint (`inboxes.agent`): the one model client of the server. */
interface ChatSettings {
  url: string | null;
  model: string;
  apiKey: string | null;
  timeoutSeconds: number;
  allowPrivateNetworks: boolean;
}

interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

const MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * One chat-completions request; the answer's first message content. Throws on no answer, an
 * HTTP error or a body that is not a completion: callers retry or report. Requests go
 * through safeRequest (private addresses refused unless allowed).
 */
export async function chatCompletion(
  settings: ChatSettings,
  resolver: DnsResolver,
  messages: ChatMessage[],
  options: { json?: boolean } = {},
): Promise<unknown> {
  if (!settings.url) throw new Error('no model endpoint is configured (inboxes.agent.url)');
  const response = await safeRequest(settings.url, {
    policy: { allowPrivateNetworks: settings.allowPrivateNetworks, resolver },
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
    },
    body: JSON.stringify({
      model: settings.model,
      messages,
      ...(options.json ? { response_format: { type: 'json_object' } } : {}),
      temperature: 0,
    }),
    timeoutMs: settings.timeoutSeconds * 1000,
    maxResponseBytes: MAX_RESPONSE_BYTES,
  });
  if (response.status < 200 || response.status > 299)
    throw new Error(`the model endpoint answered HTTP ${response.status}`);
  let body: { choices?: Array<{ message?: { content?: unknown } }> };
  try {
    body = JSON.parse(response.body.toString('utf8')) as typeof body;
  } catch {
    throw new Error('the model endpoint answered something other than JSON');
  }
  return body.choices?.[0]?.message?.content;
}
