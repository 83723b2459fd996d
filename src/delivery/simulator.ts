import type { Outcome } from './outcome.js';

/**
 * The simulator: mail sent with a test key (`sk_test_`), and mail to any address at
 * `simulator.mailsvc.dev` or at `resend.dev` (Resend's test recipients, simulated on every key
 * as Resend does, so that an application's tests never mail resend.dev), runs the whole
 * pipeline (queue, attempts, events, webhooks) but never opens a connection. The local part
 * picks the result (a `+label` is ignored):
 *
 * | address                                | result                                             |
 * |----------------------------------------|----------------------------------------------------|
 * | `bounced@simulator.mailsvc.dev`        | hard bounce, 550 5.1.1 (`email.bounced`)           |
 * | `complained@simulator.mailsvc.dev`     | delivered, then `email.complained`                 |
 * | `delayed@simulator.mailsvc.dev`        | deferred once (`email.delivery_delayed`), then delivered on the retry |
 * | `suppressed@simulator.mailsvc.dev`     | suppressed (`email.suppressed`), as if on the list |
 * | anything else                          | delivered (`email.sent`, `email.delivered`)        |
 *
 * Simulated bounces and complaints do not add to the workspace's suppression list.
 */

const SIMULATOR_DOMAIN = 'simulator.mailsvc.dev';
/** Where Resend's test recipients live (`delivered@resend.dev`, …). */
const RESEND_TEST_DOMAIN = 'resend.dev';
/** The MX host simulated attempts name. */
export const SIMULATOR_HOST = 'simulator';
const HOST = SIMULATOR_HOST;

export const isSimulated = (test: boolean, recipientDomain: string): boolean =>
  test || recipientDomain === SIMULATOR_DOMAIN || recipientDomain === RESEND_TEST_DOMAIN;

export function simulate(recipient: string, attemptsSoFar: number, now: number): Outcome {
  const local = recipient.toLowerCase().split('@')[0]!.split('+')[0]!;
  const delivered: Outcome = {
    kind: 'delivered',
    code: 250,
    response: '250 2.0.0 OK (simulated)',
    mxHost: HOST,
    tls: true,
    relayed: false,
  };
  switch (local) {
    case 'bounced':
      return {
        kind: 'bounced',
        code: 550,
        response: '550 5.1.1 The email account does not exist (simulated)',
        category: 'unknown_user',
        bounceType: 'hard',
        mxHost: HOST,
        tls: true,
        simulated: true,
      };
    case 'complained':
      return { ...delivered, complained: true };
    case 'delayed':
      return attemptsSoFar === 0
        ? {
            kind: 'deferred',
            code: 451,
            response: '451 4.3.0 Temporary failure (simulated)',
            category: 'capacity',
            mxHost: HOST,
            tls: true,
          }
        : delivered;
    case 'suppressed':
      return {
        kind: 'suppressed',
        entry: {
          workspace_id: '',
          address: recipient.toLowerCase(),
          scope: 'all',
          reason: 'manual',
          detail: 'simulated',
          email_id: null,
          created_at: now,
        },
      };
    default:
      return delivered;
  }
}
