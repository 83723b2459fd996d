import { createRequire } from 'node:module';
import { runInThisContext } from 'node:vm';
import { Worker } from 'node:worker_threads';

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
  'From', 'Sender', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'To', 'Cc',
  'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding', 'Content-ID', 'Content-Description',
  'Resent-Date', 'Resent-From', 'Resent-Sender', 'Resent-To', 'Resent-Cc', 'Resent-Message-ID',
  'In-Reply-To', 'References',
  'List-Id', 'List-Help', 'List-Unsubscribe', 'List-Unsubscribe-Post', 'List-Subscribe', 'List-Post', 'List-Owner', 'List-Archive',
  'Feedback-ID', 'BIMI-Selector',
] as const;

/**
 * Over-signed (RFC 6376 §5.4.2, §8.15): named in h= once more than they occur, so a copy of
 * the field added after signing (a second From or Subject, a List-Unsubscribe pointing
 * elsewhere) breaks the signature instead of being shown. Absent fields are named once, which
 * signs their absence.
 */
export const OVERSIGNED_HEADERS = [
  'From', 'Sender', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'To', 'Cc',
  'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding',
  'In-Reply-To', 'References', 'List-Id', 'List-Unsubscribe', 'List-Unsubscribe-Post',
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

interface SignRequest {
  id: number;
  message: Uint8Array;
  domain: string;
  selector: string;
  privateKey: string;
  signTime: number;
}
type SignReply = { id: number; signatures: string } | { id: number; error: string };

const requireHere = createRequire(import.meta.url);
const MODULES = {
  signer: requireHere.resolve('mailauth/lib/dkim/dkim-signer'),
  tools: requireHere.resolve('mailauth/lib/tools'),
};

type SignFn = (message: Buffer, req: Omit<SignRequest, 'id' | 'message'>) => Promise<string>;

/**
 * The signing function, as CommonJS source, so the worker threads and the inline signer run
 * the very same code from TypeScript sources (tests) and from dist.
 *
 * Over-signing goes through mailauth's extension point: DkimSigner's `messageHeaders` hook
 * (meant to be overridden) sees the parsed header fields before they are signed. mailauth
 * writes h= from each signed field's `casedKey`, bottom-up; the top-most signed field is
 * named last, so appending the over-signed names to its `casedKey` puts them at the end of
 * h=, after every real occurrence, where a verifier (RFC 6376 §5.4.2) finds no field left
 * for them and hashes nothing: the signature covers "no further such field". The hashed
 * header bytes are unchanged. Pinned (mailauth ~4.13) and tested against mailauth's verifier
 * (test/unit/delivery/dkim-signer.test.ts).
 */
const SIGN_SOURCE = `(require, modules, signed, oversigned) => {
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
  return async (message, req) => {
    const signer = new OversigningSigner({
      canonicalization: 'relaxed/relaxed',
      signTime: new Date(req.signTime),
      headerList: signed.join(':'),
      signatureData: [{ signingDomain: req.domain, selector: req.selector, privateKey: req.privateKey, algorithm: 'rsa-sha256', canonicalization: 'relaxed/relaxed' }],
    });
    await writeToStream(signer, message);
    const failure = (signer.errors || []).find((e) => e && e.err);
    const signatures = signer.signatureHeaders.join('\\r\\n');
    if (failure || !signatures.trim()) throw failure ? failure.err : new Error('no signature produced');
    return signatures + '\\r\\n';
  };
}`;

const SIGN_ARGS = `require, ${JSON.stringify(MODULES)}, ${JSON.stringify(SIGNED_HEADERS)}, ${JSON.stringify(OVERSIGNED_HEADERS)}`;

/**
 * The worker: plain CommonJS (see SIGN_SOURCE).
 *
 * mailauth turns the PEM key into a KeyObject (crypto.createPrivateKey) for every signature,
 * and with OpenSSL 3 that parse costs three to four times the RSA signature itself. The
 * signing thread does nothing else, so it keeps the parsed keys: createPrivateKey is wrapped
 * with a small cache keyed by the PEM text, in this thread only, before mailauth is loaded.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
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
const sign = (${SIGN_SOURCE})(${SIGN_ARGS});
parentPort.on('message', async (req) => {
  try {
    const signatures = await sign(Buffer.from(req.message.buffer, req.message.byteOffset, req.message.byteLength), req);
    parentPort.postMessage({ id: req.id, signatures });
  } catch (err) {
    parentPort.postMessage({ id: req.id, error: String((err && err.message) || err) });
  }
});
`;

const prepend = (signatures: string, message: Buffer): Buffer => Buffer.concat([Buffer.from(signatures, 'utf8'), message]);

function inlineSigner(): DkimSigner {
  const sign = runInThisContext(`(${SIGN_SOURCE})`, { filename: 'dkim-sign.cjs' })(requireHere, MODULES, SIGNED_HEADERS, OVERSIGNED_HEADERS) as SignFn;
  return {
    async sign(message, key, signTime) {
      try {
        return prepend(await sign(message, { ...key, signTime }), message);
      } catch (err) {
        throw new Error(`DKIM signing failed: ${(err as Error).message}`);
      }
    },
    close: async () => {},
  };
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve(sig: string): void; reject(err: Error): void }>;
}

export function createDkimSigner(options: { threads: number }): DkimSigner {
  if (options.threads <= 0) return inlineSigner();
  let nextId = 1;
  let closing = false;

  const spawn = (): Slot => {
    const slot: Slot = {
      worker: new Worker(WORKER_SOURCE, { eval: true }),
      pending: new Map(),
    };
    slot.worker.unref();
    slot.worker.on('message', (reply: SignReply) => {
      const waiter = slot.pending.get(reply.id);
      if (!waiter) return;
      slot.pending.delete(reply.id);
      if ('error' in reply) waiter.reject(new Error(`DKIM signing failed: ${reply.error}`));
      else waiter.resolve(reply.signatures);
    });
    const fail = (err: Error) => {
      for (const waiter of slot.pending.values()) waiter.reject(err);
      slot.pending.clear();
      const index = slots.indexOf(slot);
      // A dead signing thread is replaced; its messages were failed and will be retried.
      if (index >= 0 && !closing) slots[index] = spawn();
    };
    slot.worker.on('error', (err) => fail(err));
    slot.worker.on('exit', (code) => {
      if (!closing) fail(new Error(`DKIM signing thread exited with code ${code}`));
    });
    return slot;
  };
  // Threads start with the first message, so a server that sends nothing spawns none.
  const slots: Slot[] = [];

  return {
    sign(message, key, signTime) {
      if (closing) return Promise.reject(new Error('DKIM signer is closed'));
      if (slots.length === 0) for (let i = 0; i < options.threads; i++) slots.push(spawn());
      // The least busy thread takes it.
      const slot = slots.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
      const id = nextId++;
      return new Promise<string>((resolve, reject) => {
        slot.pending.set(id, { resolve, reject });
        // A private copy, moved (not cloned) to the thread.
        const copy = new Uint8Array(message);
        const req: SignRequest = { id, message: copy, domain: key.domain, selector: key.selector, privateKey: key.privateKey, signTime };
        slot.worker.postMessage(req, [copy.buffer]);
      }).then((signatures) => prepend(signatures, message));
    },
    async close() {
      closing = true;
      await Promise.all(slots.map((s) => s.worker.terminate()));
      for (const s of slots) for (const waiter of s.pending.values()) waiter.reject(new Error('DKIM signer closed'));
    },
  };
}
