import {
  ERROR_CATEGORIES,
  RESPONSE_RULES,
  type BounceType,
  type Category,
  type ResponseAction,
  type ResponseRule,
} from './response-rules.js';

interface Classification {
  action: ResponseAction;
  category: Category;
  /** Set for bounces. */
  bounceType: BounceType | null;
  slowDown: boolean;
}

/** Joins a multi-line reply into one line, as the rules expect. */
export const oneLine = (reply: string): string => reply.replace(/\r?\n/g, ' ').trim();

/** Classifies a remote server's negative reply (4xx or 5xx) with the first matching rule. */
export function classifyResponse(reply: string, rules: readonly ResponseRule[] = RESPONSE_RULES): Classification {
  const line = oneLine(reply);
  const rule = rules.find((r) => r.match.test(line));
  if (!rule) {
    // No rule matches (not even the reply class): a malformed reply, treated as temporary.
    return { action: 'defer', category: 'protocol', bounceType: null, slowDown: false };
  }
  return {
    action: rule.action,
    category: rule.category,
    bounceType: rule.action === 'bounce' ? (rule.bounceType ?? 'soft') : null,
    slowDown: rule.slowDown === true,
  };
}

/** A failure without a reply (connection, DNS, TLS, timeout): always a deferral. */
export function classifyError(code: string | undefined): Classification {
  return { action: 'defer', category: ERROR_CATEGORIES[code ?? ''] ?? 'network', bounceType: null, slowDown: false };
}
