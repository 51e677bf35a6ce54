import { Injectable } from '@nestjs/common';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { TokensService } from '../tokens/tokens.service.js';
import { Clock } from '../common/clock.js';
import { type RecognisedBrowser, RateLimits } from '../rate-limits/rate-limits.js';
import { PasskeysRepository, type PasskeyRow } from './passkeys.repository.js';

/** A passkey that could not be registered or used (its answer did not verify, it is unknown, or its counter went back). */
export class PasskeyRefused extends Error {}

/** Where the browser is: the origin the ceremony must come from, and the relying party id (its host name). */
export interface WebAuthnSite {
  origin: string;
  rpId: string;
}

/** Who is signing in with a passkey: the address, and the owner's recognised browser if this is it (a device cookie for the passkey's account). */
export interface PasskeyAttempt {
  ip: string;
  browserFor(ownerEmail: string): Promise<RecognisedBrowser | null>;
  /**
   * When the challenge was issued, if it was kept by the browser (sealed) rather than in a
   * session, from which it would be deleted on use: then the passkey records it, so that it
   * signs in once.
   */
  challengeIssuedAt?: Date;
}

/**
 * @simplewebauthn/server, loaded at the first passkey operation: with its certificate parsers it
 * is the heaviest package the service loads (about 0.4 s of CPU), and most starts never use it.
 */
const webAuthn = () => import('@simplewebauthn/server');

/** The most passkeys one person keeps. */
export const MAX_PASSKEYS = 20;

/**
 * Passkeys (WebAuthn) with @simplewebauthn/server: registered from the security page, used to sign
 * in alone (discoverable credentials, user verification required: the device's PIN or biometrics
 * is the second factor) or as the second step after a password. Challenges live in the browser's
 * session (the caller's), one at a time, used once; the sign-in page's anonymous one is sealed in
 * the browser instead (it stores nothing), and the passkey that uses it records when it was
 * issued. Every sign-in is counted before its assertion is verified (RateLimits.attemptPasskey).
 */
@Injectable()
export class PasskeysService {
  constructor(
    private readonly passkeys: PasskeysRepository,
    private readonly limits: RateLimits,
    private readonly clock: Clock,
    private readonly tokens: TokensService,
  ) {}

  list(userId: string): Promise<PasskeyRow[]> {
    return this.passkeys.listForUser(userId);
  }

  async has(userId: string): Promise<boolean> {
    return (await this.passkeys.listForUser(userId)).length > 0;
  }

  /** Options for the browser to create a passkey for `user`; the caller keeps `challenge` in the session. */
  async registrationOptions(user: { id: string; email: string; name: string }, site: WebAuthnSite): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.passkeys.listForUser(user.id);
    if (existing.length >= MAX_PASSKEYS) throw new PasskeyRefused(`You have ${MAX_PASSKEYS} passkeys: remove one first.`);
    return (await webAuthn()).generateRegistrationOptions({
      rpName: 'Prospect',
      rpID: site.rpId,
      userName: user.email,
      userDisplayName: user.name,
      userID: new TextEncoder().encode(user.id),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    });
  }

  /** Verifies the browser's new credential against the challenge and keeps it. @throws PasskeyRefused */
  async register(userId: string, response: RegistrationResponseJSON, challenge: string, site: WebAuthnSite, name: string, ip: string | null): Promise<void> {
    const verified = await (await webAuthn()).verifyRegistrationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: site.origin,
      expectedRPID: site.rpId,
      requireUserVerification: true,
    }).catch((err: unknown) => {
      throw new PasskeyRefused(err instanceof Error ? err.message : 'The passkey could not be verified.');
    });
    if (!verified.verified) throw new PasskeyRefused('The passkey could not be verified.');
    const { credential } = verified.registrationInfo;
    const added = await this.passkeys.insert(
      {
        userId,
        credentialId: credential.id,
        publicKey: Buffer.from(credential.publicKey),
        counter: credential.counter,
        transports: credential.transports ?? [],
        name,
        createdAt: this.clock.now(),
      },
      ip,
    );
    if (!added) throw new PasskeyRefused('This passkey is registered already.');
  }

  /** Options to sign in with a passkey: any discoverable one, or (`userId`, a second step) one of theirs. */
  async authenticationOptions(site: WebAuthnSite, userId?: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const allow = userId ? (await this.passkeys.listForUser(userId)).map((p) => ({ id: p.credentialId, transports: p.transports })) : undefined;
    return (await webAuthn()).generateAuthenticationOptions({ rpID: site.rpId, userVerification: 'required', allowCredentials: allow });
  }

  /**
   * The person a passkey's assertion signs in (of `userId`, when given), after checking it against
   * the challenge, its public key, the user verification and its counter. Counted first, per
   * credential id and address, or per browser when it is the passkey owner's recognised one, so a
   * flood of fake assertions is refused, unverified and unaudited, past the limit.
   * @throws PasskeyRefused, TooManyRequests
   */
  async authenticate(response: AuthenticationResponseJSON, challenge: string, site: WebAuthnSite, attempt: PasskeyAttempt, userId?: string): Promise<string> {
    if (typeof response?.id !== 'string') throw new PasskeyRefused('This passkey is not registered here.');
    // Looked up first (a read) only to know whose browser this may be; nothing is verified before the count.
    const found = await this.passkeys.findForSignIn(response.id);
    const passkey = found && (!userId || found.userId === userId) ? found : undefined;
    const browser = passkey ? await attempt.browserFor(passkey.ownerEmail) : null;
    await this.limits.attemptPasskey(passkey ? passkey.credentialId : null, attempt.ip, browser);
    if (!passkey) throw new PasskeyRefused('This passkey is not registered here.');
    const verified = await (await webAuthn()).verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: site.origin,
      expectedRPID: site.rpId,
      credential: { id: passkey.credentialId, publicKey: new Uint8Array(passkey.publicKey), counter: passkey.counter, transports: passkey.transports as never },
      requireUserVerification: true,
    }).catch((err: unknown) => {
      throw new PasskeyRefused(err instanceof Error ? err.message : 'The passkey could not be verified.');
    });
    if (!verified.verified) throw new PasskeyRefused('The passkey could not be verified.');
    const issuedAt = attempt.challengeIssuedAt ?? null;
    if (!(await this.passkeys.recordUse(passkey.id, verified.authenticationInfo.newCounter, this.clock.now(), issuedAt))) {
      if (issuedAt && (await this.passkeys.usedChallengeSince(passkey.id, issuedAt))) throw new PasskeyRefused('That took too long or was already used: please try again.');
      throw new PasskeyRefused('This passkey’s counter went back: it may have been copied. Remove it and register it again.');
    }
    await this.limits.passkeySucceeded(passkey.credentialId, attempt.ip, browser);
    return passkey.userId;
  }

  /** Every passkey of this person (an administrator's reset of a lost device); how many. Their grants end with them (remove). */
  async removeAllOf(userId: string): Promise<number> {
    const removed = await this.passkeys.removeAllOf(userId);
    if (removed) await this.tokens.revokeGrantsOfUser(userId, 'passkeys removed', null);
    return removed;
  }

  rename(userId: string, id: string, name: string): Promise<boolean> {
    return this.passkeys.rename(userId, id, name);
  }

  /**
   * A passkey is one of the factors the account's grants were approved under: they end with it (a
   * device or an app approved while it guarded the account signs in again), as with an authenticator app.
   */
  async remove(userId: string, id: string, ip: string | null): Promise<boolean> {
    const removed = await this.passkeys.remove(userId, id, this.clock.now(), ip);
    if (removed) await this.tokens.revokeGrantsOfUser(userId, 'passkey removed', ip);
    return removed;
  }
}
