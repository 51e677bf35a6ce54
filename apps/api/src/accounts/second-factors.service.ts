import { randomInt } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Secret, TOTP, URI } from 'otpauth';
import QRCode from 'qrcode';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { type RecognisedBrowser, RateLimits } from '../rate-limits/rate-limits.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { PasskeysRepository } from './passkeys.repository.js';
import { SecondFactorsRepository } from './second-factors.repository.js';
import { TokensService } from '../tokens/tokens.service.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** How many recovery codes a person gets, each shown once. */
export const RECOVERY_CODE_COUNT = 10;
/** RFC 6238's defaults, which every authenticator app takes: SHA-1, 6 digits, 30-second steps. */
const PERIOD_SECONDS = 30;
/** Codes one step early or late are accepted too (a phone's clock drifts). */
const DRIFT_STEPS = 1;
/** Recovery codes: 10 characters of this alphabet (50 bits), shown as `xxxxx-xxxxx`. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A code that is neither a current TOTP code nor an unused recovery code of the account. */
export class WrongCodeError extends Error {}

export interface TotpEnrolment {
  /** The key sealed for the session until the first code confirms it (never kept in clear). */
  pendingSealed: string;
  /** The key in base32, for typing into an app. */
  key: string;
  /** An `otpauth://` URI as a QR code (a PNG data URL). */
  qrDataUrl: string;
}

const normalizeRecoveryCode = (code: string) => code.toLowerCase().replace(/[\s-]/g, '');

/**
 * Second factors for the web sign-in: one authenticator app (TOTP, RFC 6238, via otpauth) and
 * ten single-use recovery codes. The TOTP key is kept sealed with a server key (like the session
 * key, in `server_secrets`); a code is accepted once (its time step must be later than the last
 * accepted); every code attempt is counted first, from the owner's recognised browser against that
 * browser, else against the account (rate-limits.ts), so guesses by people who know the password
 * never make the owner's right code a 429 on a browser the owner signed in with.
 */
@Injectable()
export class SecondFactorsService {
  constructor(
    private readonly factors: SecondFactorsRepository,
    private readonly passkeys: PasskeysRepository,
    private readonly secrets: ServerSecrets,
    private readonly limits: RateLimits,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly tokens: TokensService,
  ) {}

  async hasTotp(userId: string): Promise<boolean> {
    return (await this.factors.findTotp(userId)) !== undefined;
  }

  /** An app or a passkey: a sign-in with the password alone then asks for one of them. */
  async hasAny(userId: string): Promise<boolean> {
    return (await this.hasTotp(userId)) || (await this.passkeys.listForUser(userId)).length > 0;
  }

  unusedRecoveryCodes(userId: string): Promise<number> {
    return this.factors.unusedRecoveryCodes(userId);
  }

  /** A new key for `account`, not yet enrolled: the page shows it and asks for a first code. */
  async beginEnrolment(account: { id: string; email: string }): Promise<TotpEnrolment> {
    const secret = new Secret({ size: 20 });
    const totp = this.totp(secret, account.email);
    return {
      pendingSealed: await this.sealKey(account.id, 'totp-pending', secret.base32),
      key: secret.base32.replace(/(.{4})/g, '$1 ').trim(),
      qrDataUrl: await QRCode.toDataURL(URI.stringify(totp), { margin: 1, width: 220 }),
    };
  }

  /** The key of a pending enrolment, to show it again after a wrong first code. */
  async pendingKey(account: { id: string; email: string }, pendingSealed: string): Promise<Omit<TotpEnrolment, 'pendingSealed'> | null> {
    const key = await this.openKey(account.id, 'totp-pending', pendingSealed);
    if (!key) return null;
    const totp = this.totp(Secret.fromBase32(key), account.email);
    return { key: key.replace(/(.{4})/g, '$1 ').trim(), qrDataUrl: await QRCode.toDataURL(URI.stringify(totp), { margin: 1, width: 220 }) };
  }

  /**
   * Enrols the pending key once a first code from the app matches it; the new recovery codes
   * (shown once), or false when the person is enrolled already.
   * @throws WrongCodeError, TooManyRequests
   */
  async confirmEnrolment(account: { id: string; email: string }, pendingSealed: string, code: string, ip: string | null): Promise<string[] | false> {
    // Counted apart from sign-in codes: neither blocks the other.
    await this.limits.attemptEnrolmentCode(account.id);
    const key = await this.openKey(account.id, 'totp-pending', pendingSealed);
    const step = key === null ? null : this.matchingStep(Secret.fromBase32(key), account.email, code);
    if (step === null) throw new WrongCodeError();
    await this.limits.enrolmentCodeSucceeded(account.id);
    const codes = this.newRecoveryCodes();
    const now = this.clock.now();
    const sealed = Buffer.from(await this.sealKey(account.id, 'totp', key!), 'base64url');
    const enrolled = await this.uow.run(async (tx) => {
      if (!(await this.factors.enrol(tx, account.id, sealed, step, codes.map((c) => this.hashRecoveryCode(account.id, c)), now))) return false;
      await this.audit.record('factor.totp_add', { userId: account.id, ip, at: now }, tx);
      return true;
    });
    return enrolled ? codes : false;
  }

  /**
   * Checks a second-factor code: a TOTP code (accepted once) or an unused recovery code (used up,
   * and the owner told by mail). Counted first: against `browser` when the code comes from the
   * owner's recognised browser (a device cookie for the account at the second step of a sign-in,
   * the signed-in session in sudo mode), else against the account.
   * @throws WrongCodeError, TooManyRequests
   */
  async verify(account: { id: string; email: string; name: string }, codeInput: string, ip: string | null, browser: RecognisedBrowser | null): Promise<'totp' | 'recovery-code'> {
    await this.limits.attemptSecondFactor(account.id, browser);
    const code = codeInput.replace(/\s/g, '');
    let used: 'totp' | 'recovery-code' | null = null;
    if (/^\d{6}$/.test(code)) {
      const factor = await this.factors.findTotp(account.id);
      const key = factor && (await this.openKey(account.id, 'totp', factor.keySealed.toString('base64url')));
      const step = key ? this.matchingStep(Secret.fromBase32(key), account.email, code) : null;
      if (step !== null && (await this.factors.acceptStep(account.id, step))) used = 'totp';
    } else if (normalizeRecoveryCode(code).length === 10 && code.length <= 20) {
      if (await this.factors.useRecoveryCode(account.id, this.hashRecoveryCode(account.id, normalizeRecoveryCode(code)), this.clock.now(), ip)) {
        used = 'recovery-code';
        const left = await this.factors.unusedRecoveryCodes(account.id);
        await this.mailer.send(
          composeMail(account.email, 'A Prospect recovery code was used', {
            paragraphs: [
              `Hello ${account.name},`,
              `A recovery code of your Prospect account at ${this.config.publicUrl} was just used to sign in${ip ? ` from the address ${ip}` : ''}. ${left} of them are left.`,
              'If it was not you, sign in, change your password and make new recovery codes at once.',
            ],
            link: { url: `${this.config.publicUrl}/settings/security`, label: 'Your security settings' },
          }),
        );
      }
    }
    if (!used) throw new WrongCodeError();
    await this.limits.secondFactorSucceeded(account.id, browser);
    return used;
  }

  /** New recovery codes in place of the old ones, shown once; audited. */
  async regenerateRecoveryCodes(userId: string, ip: string | null): Promise<string[]> {
    const codes = this.newRecoveryCodes();
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      await this.factors.replaceRecoveryCodes(tx, userId, codes.map((c) => this.hashRecoveryCode(userId, c)), now);
      await this.audit.record('factor.recovery_codes_new', { userId, ip, at: now }, tx);
    });
    return codes;
  }

  /**
   * Turns the second factor off (by the person, or by an admin for someone who lost their phone).
   * The account's factors are part of the state its grants were approved under: every grant ends
   * with the factor (a device or an app approved while it guarded the account signs in again).
   */
  async remove(userId: string, ip: string | null, by?: string): Promise<boolean> {
    const removed = await this.factors.remove(userId, this.clock.now(), ip, by);
    if (removed) await this.tokens.revokeGrantsOfUser(userId, 'second factor removed', ip);
    return removed;
  }

  private totp(secret: Secret, email: string): TOTP {
    return new TOTP({ issuer: 'Prospect', label: email, secret, period: PERIOD_SECONDS });
  }

  /** The time step `code` belongs to (within the drift), or null. */
  private matchingStep(secret: Secret, email: string, code: string): number | null {
    if (!/^\d{6}$/.test(code)) return null;
    const timestamp = this.clock.now().getTime();
    const delta = this.totp(secret, email).validate({ token: code, timestamp, window: DRIFT_STEPS });
    return delta === null ? null : TOTP.counter({ period: PERIOD_SECONDS, timestamp }) + delta;
  }

  private newRecoveryCodes(): string[] {
    return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
      let code = '';
      for (let i = 0; i < 10; i++) code += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
      return `${code.slice(0, 5)}-${code.slice(5)}`;
    });
  }

  /** High-entropy codes: one SHA-256 suffices; the user's id keeps equal codes of two people apart. */
  private hashRecoveryCode(userId: string, code: string): Buffer {
    return sha256(`${userId}:${normalizeRecoveryCode(code)}`);
  }

  private async sealKey(userId: string, purpose: string, key: string): Promise<string> {
    return seal(await this.secrets.get('totp-keys'), userId, purpose, key).toString('base64url');
  }

  private async openKey(userId: string, purpose: string, sealed: string): Promise<string | null> {
    if (!/^[A-Za-z0-9_-]{1,400}$/.test(sealed)) return null;
    return open<string>(await this.secrets.get('totp-keys'), userId, purpose, Buffer.from(sealed, 'base64url'));
  }
}
