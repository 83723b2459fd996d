import { AppError, isAppError, validationError } from '../../shared/errors.js';
import type { Workspace } from '../../store/workspaces.js';
import type { Address } from '../../messages/addresses.js';
import type { Prepared } from '../../messages/email-records.js';
import type { RawSendInput, SendInput, SendOptions, SendOutcome } from './send-input.js';
import { defaultSender, sendingDomain, type SendServiceDeps } from './send-checks.js';
import { prepareMessage } from './prepare-message.js';
import { prepareRaw } from './prepare-raw.js';

/** Most messages in one batch request. */
export const MAX_BATCH = 100;

export interface SendService {
  send(workspace: Workspace, input: SendInput, options?: SendOptions): Promise<SendOutcome>;
  /** All or nothing: every message is validated before any is queued. */
  sendMany(workspace: Workspace, inputs: SendInput[], options?: SendOptions): Promise<SendOutcome>;
  /** Queues a whole message as submitted (SMTP); recipients from the envelope. */
  sendRaw(workspace: Workspace, input: RawSendInput, options?: SendOptions): Promise<SendOutcome>;
  /** The sender used when a request names none (legacy from_email absent). */
  defaultSender(workspace: Workspace): Promise<Address>;
  /** Throws 403 unless `address` may send for the workspace (verified domain; added, for test keys). */
  checkSender(workspace: Workspace, address: string, test: boolean, senderDomainId?: string | null): Promise<void>;
}

export function createSendService(deps: SendServiceDeps): SendService {
  return {
    sendRaw: async (workspace, input, options = {}) =>
      commit(deps, workspace, [await prepareRaw(deps, workspace, input)], options),
    send: (workspace, input, options) => sendMany(deps, workspace, [input], options, false),
    sendMany: (workspace, inputs, options) => {
      if (inputs.length > MAX_BATCH) throw validationError('body', `at most ${MAX_BATCH} messages per batch`);
      return sendMany(deps, workspace, inputs, options);
    },
    defaultSender: (workspace) => defaultSender(deps, workspace),
    checkSender: async (workspace, address, test, senderDomainId) => {
      await sendingDomain(deps, workspace, { name: '', address }, test, 'from', senderDomainId);
    },
  };
}

/** Every message prepared before any is queued; with `permissive`, the refused are reported beside the queued. */
async function sendMany(
  deps: SendServiceDeps,
  workspace: Workspace,
  inputs: SendInput[],
  options: SendOptions = {},
  indexed = true,
): Promise<SendOutcome> {
  if (inputs.length === 0) throw validationError('body', 'at least one message is required');
  const prepared: Prepared[] = [];
  const errors: Array<{ index: number; message: string; error: AppError }> = [];
  for (const [i, input] of inputs.entries()) {
    try {
      prepared.push(await prepareMessage(deps, workspace, input));
    } catch (err) {
      if (!isAppError(err)) throw err;
      const indexedError =
        indexed && err.field !== undefined
          ? new AppError(err.code, `[${i}].${err.message}`, { field: `[${i}].${err.field}` })
          : err;
      if (!options.permissive || err.code === 'internal_error') throw indexedError;
      errors.push({ index: i, message: err.message, error: indexedError });
    }
  }
  // Nothing valid to queue: the answer is the first message's error, as without permissive.
  if (prepared.length === 0) throw errors[0]!.error;
  const refused = options.permissive ? errors.map(({ index, message }) => ({ index, message })) : undefined;
  const outcome = await commit(deps, workspace, prepared, options, refused);
  return refused ? { ...outcome, errors: refused } : outcome;
}

/** Through the one door: the workspace's limits, then the queue. */
function commit(
  deps: SendServiceDeps,
  workspace: Workspace,
  prepared: Prepared[],
  options: SendOptions,
  refused?: SendOutcome['errors'],
): Promise<SendOutcome> {
  return deps.enqueue(workspace, prepared, {
    inTransaction: options.inTransaction && ((trx, results) => options.inTransaction!(trx, results, refused)),
  });
}
