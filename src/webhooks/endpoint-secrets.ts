import { decryptSecret } from '../shared/crypto.js';
import type { WebhookEndpoint } from '../store/webhooks.js';

const MAX_KEPT = 1000;

/**
 * An endpoint's signing secrets, unsealed once and kept (sealed text → plain): every POST signs,
 * and unsealing is an AES-GCM open per attempt otherwise. Bounded: past MAX_KEPT it starts over.
 */
export class EndpointSecrets {
  private readonly plain = new Map<string, string>();
  constructor(private readonly secretKey: Buffer) {}

  /** The secrets a POST is signed with now: the current one, and the previous one during a rotation's overlap. */
  active(endpoint: WebhookEndpoint, now: number): string[] {
    const list = [this.unseal(endpoint.secret_sealed)];
    if (
      endpoint.previous_secret_sealed &&
      endpoint.previous_secret_expires_at !== null &&
      endpoint.previous_secret_expires_at > now
    ) {
      list.push(this.unseal(endpoint.previous_secret_sealed));
    }
    return list;
  }

  private unseal(sealed: string): string {
    let plain = this.plain.get(sealed);
    if (plain === undefined) {
      if (this.plain.size >= MAX_KEPT) this.plain.clear();
      this.plain.set(sealed, (plain = decryptSecret(this.secretKey, sealed)));
    }
    return plain;
  }
}
