import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * DKIM signing with mailauth: relaxed/relaxed, rsa-sha256 with the sending domain's active
 * selector, mailauth's standard header set (From, To, Subject, Date, Message-ID, MIME
 * headers, List-*, …). Signing is the CPU cost of delivery (PERFORMANCE.md), so it runs on
 * worker threads, off the event loop that drives the SMTP connections; `threads: 0` signs
 * inline.
 */

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
const SIGN_MODULE = requireHere.resolve('mailauth/lib/dkim/sign');

type DkimSignFn = (input: Buffer, options: Record<string, unknown>) => Promise<{ signatures: string; errors: Array<{ err?: Error }> }>;

const signOptions = (req: Omit<SignRequest, 'id' | 'message'>) => ({
  canonicalization: 'relaxed/relaxed',
  signTime: new Date(req.signTime),
  signatureData: [{ signingDomain: req.domain, selector: req.selector, privateKey: req.privateKey, algorithm: 'rsa-sha256', canonicalization: 'relaxed/relaxed' }],
});

/** The worker: plain CommonJS so it runs the same from TypeScript sources (tests) and from dist. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { dkimSign } = require(workerData.signModule);
parentPort.on('message', async (req) => {
  try {
    const result = await dkimSign(Buffer.from(req.message.buffer, req.message.byteOffset, req.message.byteLength), {
      canonicalization: 'relaxed/relaxed',
      signTime: new Date(req.signTime),
      signatureData: [{ signingDomain: req.domain, selector: req.selector, privateKey: req.privateKey, algorithm: 'rsa-sha256', canonicalization: 'relaxed/relaxed' }],
    });
    const failure = (result.errors || []).find((e) => e && e.err);
    if (failure || !result.signatures.trim()) throw failure ? failure.err : new Error('no signature produced');
    parentPort.postMessage({ id: req.id, signatures: result.signatures });
  } catch (err) {
    parentPort.postMessage({ id: req.id, error: String((err && err.message) || err) });
  }
});
`;

const prepend = (signatures: string, message: Buffer): Buffer => Buffer.concat([Buffer.from(signatures, 'utf8'), message]);

function inlineSigner(): DkimSigner {
  const dkimSign = (requireHere(SIGN_MODULE) as { dkimSign: DkimSignFn }).dkimSign;
  return {
    async sign(message, key, signTime) {
      const result = await dkimSign(message, signOptions({ ...key, signTime }));
      const failure = result.errors.find((e) => e?.err);
      if (failure || !result.signatures.trim()) throw new Error(`DKIM signing failed: ${failure?.err?.message ?? 'no signature produced'}`);
      return prepend(result.signatures, message);
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
      worker: new Worker(WORKER_SOURCE, { eval: true, workerData: { signModule: SIGN_MODULE } }),
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
