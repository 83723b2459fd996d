import { createRequire } from 'node:module';
import { createWorkerPool, type WorkerPool } from '../shared/worker-pool.js';

/**
 * DKIM signing with mailauth: relaxed/relaxed, rsa-sha256 with the sending domain's active
 * selector, over SIGNED_HEADERS, with OVERSIGNED_HEADERS named once more than they occur.
 * Signing is the CPU cost of delivery (PERFORMANCE.md), so it runs on worker threads, off the
 * event loop that drives the SMTP connections; `threads: 0` signs inline.
 */

/**
 * The header fields signed when present: RFC 6376 §5.4.1's list (From, Reply-To, Subject,
 * Date, To, Cc, Resent-*, In-Reply-To, References, List-*), the fields that identify the
 * message and its MIME structure, and List-Unsubscribe-Post, which RFC 8058 §4 requires to be
 * covered for one-click unsubscribe. Return-Path, Received, Comments and Keywords are left
 * out, as §5.4.1 advises.
 */
export const SIGNED_HEADERS = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-ID',
  'Content-Description',
  'Resent-Date',
  'Resent-From',
  'Resent-Sender',
  'Resent-To',
  'Resent-Cc',
  'Resent-Message-ID',
  'In-Reply-To',
  'References',
  'List-Id',
  'List-Help',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
  'List-Subscribe',
  'List-Post',
  'List-Owner',
  'List-Archive',
  'Feedback-ID',
  'BIMI-Selector',
] as const;

/**
 * Over-signed (RFC 6376 §5.4.2, §8.15): named in h= once more than they occur, so a copy of
 * the field added after signing (a second From or Subject, a List-Unsubscribe pointing
 * elsewhere) breaks the signature instead of being shown. Absent fields are named once, which
 * signs their absence.
 */
export const OVERSIGNED_HEADERS = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'In-Reply-To',
  'References',
  'List-Id',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
] as const;

export interface DkimKey {
  /** d= */
  domain: string;
  /** s= */
  selector: string;
  /** PKCS#8 PEM. */
  privateKey: string;
}

export interface DkimSigner {
  /** The message with its DKIM-Signature header prepended. */
  sign(message: Buffer, key: DkimKey, signTime: number): Promise<Buffer>;
  close(): Promise<void>;
}

const requireHere = createRequire(import.meta.url);
const MODULES = {
  signer: requireHere.resolve('mailauth/lib/dkim/dkim-signer'),
  tools: requireHere.resolve('mailauth/lib/tools'),
};

/**
 * The signing task (CommonJS source for the worker pool, src/shared/worker-pool.ts), so the
 * worker threads and the inline pool run the very same code.
 *
 * Over-signing goes through mailauth's extension point: DkimSigner's `messageHeaders` hook
 * (meant to be overridden) sees the parsed header fields before they are signed. mailauth
 * writes h= from each signed field's `casedKey`, bottom-up; the top-most signed field is
 * named last, so appending the over-signed names to its `casedKey` puts them at the end of
 * h=, after every real occurrence, where a verifier (RFC 6376 §5.4.2) finds no field left
 * for them and hashes nothing: the signature covers "no further such field". The hashed
 * header bytes are unchanged. Pinned (mailauth ~4.13) and tested against mailauth's verifier
 * (test/unit/delivery/dkim-signer.test.ts).
 *
 * mailauth turns the PEM key into a KeyObject (crypto.createPrivateKey) for every signature,
 * and with OpenSSL 3 that parse costs three to four times the RSA signature itself. On a
 * worker thread, createPrivateKey is wrapped with a small cache keyed by the PEM text (in that
 * thread only, never on the main thread) before mailauth is loaded.
 */
export const SIGN_TASK = `(require) => {
  const modules = ${JSON.stringify(MODULES)};
  const signed = ${JSON.stringify(SIGNED_HEADERS)};
  const oversigned = ${JSON.stringify(OVERSIGNED_HEADERS)};
  if (!require('node:worker_threads').isMainThread) {
    const crypto = require('node:crypto');
    const parse = crypto.createPrivateKey;
    const parsed = new Map();
    crypto.createPrivateKey = (input) => {
      const pem = input && typeof input === 'object' && input.format === 'pem' && (typeof input.key === 'string' || Buffer.isBuffer(input.key)) ? input.key.toString() : null;
      if (pem === null) return parse(input);
      let key = parsed.get(pem);
      if (!key) {
        key = parse(input);
        if (parsed.size >= 1000) parsed.delete(parsed.keys().next().value);
        parsed.set(pem, key);
      }
      return key;
    };
  }
  const { DkimSigner } = require(modules.signer);
  const { writeToStream } = require(modules.tools);
  const signedKeys = new Set(signed.map((name) => name.toLowerCase()));
  class OversigningSigner extends DkimSigner {
    async messageHeaders(headers) {
      const top = headers.parsed.find((h) => h.key && signedKeys.has(h.key));
      if (top) top.casedKey = [top.casedKey, ...oversigned].join(': ');
      return super.messageHeaders(headers);
    }
  }
  return async (req) => {
    const signer = new OversigningSigner({
      canonicalization: 'relaxed/relaxed',
      signTime: new Date(req.signTime),
      headerList: signed.join(':'),
      signatureData: [{ signingDomain: req.domain, selector: req.selector, privateKey: req.privateKey, algorithm: 'rsa-sha256', canonicalization: 'relaxed/relaxed' }],
    });
    await writeToStream(signer, Buffer.from(req.message.buffer, req.message.byteOffset, req.message.byteLength));
    const failure = (signer.errors || []).find((e) => e && e.err);
    const signatures = signer.signatureHeaders.join('\\r\\n');
    if (failure || !signatures.trim()) throw failure ? failure.err : new Error('no signature produced');
    return { value: signatures + '\\r\\n' };
  };
}`;

/** A DKIM signer running SIGN_TASK on `pool` (closing the pool is its owner's business). */
export function poolSigner(pool: WorkerPool): DkimSigner {
  return {
    async sign(message, key, signTime) {
      // A private copy, moved (not cloned) to the thread.
      const copy = new Uint8Array(message);
      let signatures: string;
      try {
        signatures = await pool.run<string>(
          'sign',
          { message: copy, domain: key.domain, selector: key.selector, privateKey: key.privateKey, signTime },
          [copy.buffer],
        );
      } catch (err) {
        throw new Error(`DKIM signing failed: ${(err as Error).message}`);
      }
      return Buffer.concat([Buffer.from(signatures, 'utf8'), message]);
    },
    close: async () => {},
  };
}

/** A signer with a pool of its own (`threads: 0` signs on the calling thread). */
export function createDkimSigner(options: { threads: number }): DkimSigner {
  const pool = createWorkerPool({ threads: options.threads, tasks: { sign: SIGN_TASK } });
  return { ...poolSigner(pool), close: () => pool.close() };
}
