import { randomInt } from 'node:crypto';
import { lazyImport } from '../shared/lazy-import.js';
import { decryptSecret, encryptSecret, sha256Hex } from '../shared/crypto.js';
import { AppError } from '../shared/errors.js';
import { deleteUserSessions } from '../store/dashboard.js';
import {
  confirmTwoFactor,
  countUnusedRecoveryCodes,
  findMembership,
  findTwoFactor,
  findTwoFactorGate,
  findTwoFactorRequirement,
  findUser,
  findUserByEmail,
  removeTwoFactor,
  replaceRecoveryCodes,
  savePendingTwoFactor,
  saveTwoFactorRequirement,
  useRecoveryCode,
  useTimeStep,
} from '../store/users.js';
import type { ServiceDeps } from './deps.js';
import { LoginThrottle } from './login-throttle.js';

/**
 * A second factor for dashboard users: TOTP (RFC 6238, 6 digits, 30-second steps, SHA-1: what
 * every authenticator app reads from an otpauth:// QR code) with otplib, and one-time recovery
 * codes for a lost device. The secret is sealed at rest with the instance key; a code is
 * accepted one step either side of the server's clock and never twice (the last step used is
 * stored, and a code of that step or an earlier one is refused).
 */

const TOTP_PERIOD_S = 30;
/** Steps either side of now a code may come from: a phone's clock a little off, a code typed as it turned. */
const TOTP_WINDOW_STEPS = 1;
const RECOVERY_CODES = 10;
const ISSUER = 'mailsvc';
// No 0/o, 1/l/i: codes are read off paper and typed.
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Who acts on their own account, and in which workspace (the audit log's entry goes there). */
export interface AccountActor {
  userId: string;
  workspaceId: string;
}

interface Enrolment {
  /** base32, for typing into an app that cannot scan. */
  secret: string;
  /** The otpauth:// URI the QR code holds. */
  uri: string;
  /** The QR code as an SVG document. */
  qrSvg: string;
}

interface TwoFactorStatus {
  enabled: boolean;
  recoveryCodesLeft: number;
}

type SecondFactorCheck = { ok: true; method: 'totp' | 'recovery_code'; recoveryCodesLeft: number } | { ok: false };

export interface TwoFactorService {
  status(userId: string): Promise<TwoFactorStatus>;
  /** The enrolment under way (started on first call; the same secret on a reload until confirmed). Refused once enabled. */
  enrolment(userId: string): Promise<Enrolment>;
  /** Confirms the enrolment with a code from the app; returns the recovery codes, shown this once. */
  confirm(who: AccountActor, code: string): Promise<{ recoveryCodes: string[] }>;
  /** At sign-in: a TOTP code or a recovery code of the user's. */
  check(userId: string, code: string): Promise<SecondFactorCheck>;
  /** New recovery codes (the old ones stop working), after a code proves the user holds the device. */
  regenerateRecoveryCodes(who: AccountActor, code: string): Promise<{ recoveryCodes: string[] }>;
  /** Turns it off, after a code (or a recovery code); refused where the workspace requires it. */
  disable(who: AccountActor, code: string): Promise<{ userId: string }>;
  /** `mailsvc users reset-2fa EMAIL`: a user who lost their device enrols again; their sessions end. */
  reset(email: string): Promise<{ userId: string; email: string; removed: boolean; sessionsEnded: number }>;
  /** Whether the workspace requires it, and whether this user has it. */
  gate(userId: string, workspaceId: string): Promise<{ required: boolean; enrolled: boolean }>;
  required(workspaceId: string): Promise<boolean>;
  /** An owner requires (or stops requiring) a second factor of everyone in the workspace; they must have one themselves. */
  setRequired(who: AccountActor, required: boolean): Promise<{ workspaceId: string; required: boolean }>;
}

const wrongCode = () =>
  new AppError(
    'validation_error',
    'That code is not right: enter the 6 digits your authenticator app shows now, or one of your recovery codes.',
    { field: 'code' },
  );

/** A recovery code as typed: case, spaces and dashes do not matter. */
const canonicalRecovery = (code: string): string => code.toLowerCase().replace(/[\s-]/g, '');

function newRecoveryCode(): string {
  let out = '';
  for (let i = 0; i < 12; i++) out += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
  return `${out.slice(0, 4)}-${out.slice(4, 8)}-${out.slice(8, 12)}`;
}

const otplib = lazyImport(() => import('otplib'));
const qrcode = lazyImport(async () => (await import('qrcode')).default);

export function createTwoFactorService(deps: ServiceDeps): TwoFactorService {
  const { db, clock, secretKey } = deps;
  // Per user, whatever the client: a stolen session or password must not be enough to try
  // every code (10^6, three right at any moment) at the account page or the sign-in form.
  const throttle = new LoginThrottle(() => clock.now(), 'two-factor codes');

  /** The step of a right code within the window, or undefined. Only 6 digits are tried: anything else is not a TOTP code. */
  async function totpStep(secretSealed: string, code: string, after: number | null): Promise<number | undefined> {
    const token = code.replace(/\s/g, '');
    if (!/^\d{6}$/.test(token)) return undefined;
    const { verify } = await otplib();
    const result = await verify({
      secret: decryptSecret(secretKey, secretSealed),
      token,
      epoch: Math.floor(clock.now() / 1000),
      period: TOTP_PERIOD_S,
      epochTolerance: TOTP_WINDOW_STEPS * TOTP_PERIOD_S,
      ...(after !== null ? { afterTimeStep: after } : {}),
    });
    return result.valid && 'timeStep' in result ? result.timeStep : undefined;
  }

  function newRecoveryCodes(): { codes: string[]; hashes: string[] } {
    const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
    return { codes, hashes: codes.map((c) => sha256Hex(canonicalRecovery(c))) };
  }

  async function check(userId: string, code: string): Promise<SecondFactorCheck> {
    throttle.check(userId);
    const result = await checkOnce(userId, code);
    if (result.ok) throttle.succeed(userId);
    else throttle.fail(userId);
    return result;
  }

  async function checkOnce(userId: string, code: string): Promise<SecondFactorCheck> {
    const factor = await findTwoFactor(db, userId);
    if (!factor || factor.confirmed_at === null || code.length > 64) return { ok: false };
    const step = await totpStep(factor.secret_sealed, code, factor.last_step);
    if (step !== undefined) {
      // The store takes the step only if it is later than the last: a concurrent twin loses.
      if (!(await useTimeStep(db, userId, step))) return { ok: false };
      await deps.durable();
      return { ok: true, method: 'totp', recoveryCodesLeft: await countUnusedRecoveryCodes(db, userId) };
    }
    const canonical = canonicalRecovery(code);
    if (canonical.length !== 12) return { ok: false };
    if (!(await useRecoveryCode(db, userId, sha256Hex(canonical), clock.now()))) return { ok: false };
    await deps.durable();
    return { ok: true, method: 'recovery_code', recoveryCodesLeft: await countUnusedRecoveryCodes(db, userId) };
  }

  async function userOf(userId: string) {
    const user = await findUser(db, userId);
    if (!user) throw new AppError('not_found', 'No such user');
    return user;
  }

  return {
    async status(userId) {
      const factor = await findTwoFactor(db, userId);
      const enabled = Boolean(factor && factor.confirmed_at !== null);
      return { enabled, recoveryCodesLeft: enabled ? await countUnusedRecoveryCodes(db, userId) : 0 };
    },

    async enrolment(userId) {
      const user = await userOf(userId);
      let factor = await findTwoFactor(db, userId);
      if (factor?.confirmed_at != null)
        throw new AppError('invalid_state', 'Two-factor sign-in is already on for this account');
      if (!factor) {
        await savePendingTwoFactor(
          db,
          userId,
          encryptSecret(secretKey, (await otplib()).generateSecret()),
          clock.now(),
        );
        factor = await findTwoFactor(db, userId);
        if (!factor) throw new AppError('invalid_state', 'The enrolment was changed meanwhile; reload the page');
      }
      const secret = decryptSecret(secretKey, factor.secret_sealed);
      const uri = (await otplib()).generateURI({ issuer: ISSUER, label: user.email, secret, period: TOTP_PERIOD_S });
      return {
        secret,
        uri,
        qrSvg: await (await qrcode()).toString(uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' }),
      };
    },

    async confirm(who, code) {
      const factor = await findTwoFactor(db, who.userId);
      if (!factor) throw new AppError('invalid_state', 'Start the set-up again: no enrolment is under way');
      if (factor.confirmed_at !== null)
        throw new AppError('invalid_state', 'Two-factor sign-in is already on for this account');
      throttle.check(who.userId);
      const step = await totpStep(factor.secret_sealed, code, null);
      if (step === undefined) {
        throttle.fail(who.userId);
        throw wrongCode();
      }
      const { codes, hashes } = newRecoveryCodes();
      if (!(await confirmTwoFactor(db, who.userId, factor.secret_sealed, step, hashes, clock.now())))
        throw new AppError('invalid_state', 'The enrolment was changed meanwhile; reload the page');
      await deps.durable();
      return { recoveryCodes: codes };
    },

    check,

    async regenerateRecoveryCodes(who, code) {
      if (!(await check(who.userId, code)).ok) throw wrongCode();
      const { codes, hashes } = newRecoveryCodes();
      await replaceRecoveryCodes(db, who.userId, hashes, clock.now());
      await deps.durable();
      return { recoveryCodes: codes };
    },

    async disable(who, code) {
      if ((await findTwoFactorRequirement(db, who.workspaceId)) !== undefined) {
        throw new AppError(
          'forbidden',
          'This workspace requires two-factor sign-in: it cannot be turned off (an owner can stop requiring it).',
        );
      }
      if (!(await check(who.userId, code)).ok) throw wrongCode();
      await removeTwoFactor(db, who.userId);
      await deps.durable();
      return { userId: who.userId };
    },

    async reset(email) {
      const user = await findUserByEmail(db, email.trim().toLowerCase());
      if (!user) throw new AppError('not_found', `No user with the address ${email.slice(0, 200)}`);
      const removed = await removeTwoFactor(db, user.id);
      // Whoever has the lost device may also have a signed-in browser: those sessions end too.
      const sessionsEnded = await deleteUserSessions(db, user.id, null);
      await deps.durable();
      return { userId: user.id, email: user.email, removed, sessionsEnded };
    },

    gate: (userId, workspaceId) => findTwoFactorGate(db, userId, workspaceId),

    required: async (workspaceId) => (await findTwoFactorRequirement(db, workspaceId)) !== undefined,

    async setRequired(who, required) {
      const membership = await findMembership(db, who.userId, who.workspaceId);
      if (membership?.role !== 'owner')
        throw new AppError('forbidden', 'Only an owner of the workspace can require two-factor sign-in.');
      if (required && !(await findTwoFactorGate(db, who.userId, who.workspaceId)).enrolled) {
        throw new AppError('invalid_state', 'Turn on two-factor sign-in for your own account first.');
      }
      await saveTwoFactorRequirement(db, who.workspaceId, required ? { at: clock.now(), by: who.userId } : null);
      await deps.durable();
      return { workspaceId: who.workspaceId, required };
    },
  };
}
