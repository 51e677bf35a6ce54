import { randomBytes } from 'node:crypto';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { readCookie } from '../web-sessions/request-cookies.js';
import { open, seal } from '../common/sealed.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { accountKey, type RecognisedBrowser } from '../rate-limits/rate-limits.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { UsersService } from '../users/users.service.js';

const YEAR_SECONDS = 365 * 24 * 3600;
const PURPOSE = 'device-cookie';

/**
 * What a device cookie holds, sealed: which account it vouches for, under which state of it, and
 * its own id. Cookies issued before the account's id and state were in them vouch for nothing: the
 * address alone would let a cookie of a deleted account vouch for the next account with that
 * address, whose epochs start at 0 again; such a browser gets a new cookie at its next sign-in.
 */
interface DeviceCookie {
  /** The account's id. */
  user: string;
  /** accountKey() of the e-mail it signed in with: the cookie holds no address. */
  account: string;
  /** The account's credential epoch when it was issued. */
  epoch: number;
  /** Its failures are counted under this id (rate-limits.ts). */
  nonce: string;
}

/** The account a device cookie is issued for, as it is now. */
export interface CookieAccount {
  id: string;
  email: string;
  credentialEpoch: number;
}

/**
 * OWASP's "device cookies" against account lockout: a browser that signed in to an account
 * receives a cookie for it, sealed (AES-256-GCM) under a key only the server holds. Sign-in
 * attempts that carry a valid one for the account they try are limited per cookie; attempts
 * without one are limited per account and per address. So an attacker hammering an account
 * locks out only browsers that never signed in to it: the owner's browser still signs in
 * with the right password.
 *
 * A cookie vouches for the account's state it was issued under (its credential epoch): a new
 * password, a new address or a disable ends every cookie issued before, as it ends sessions and
 * mailed links, so a browser that signed in with a stolen password is not the owner's once the
 * owner has changed it. Every sign-in (SignInService.logIn) issues one under the state it signed
 * in to, so the owner's browser that made a change stays recognised; so does the browser that
 * sets a new password with a reset link (its holder is the one who controls the account now).
 *
 * One cookie per browser, for the account it last signed in to. It is sent only to /login and
 * below: the password step, its second step (/login/code, which counts codes the same way) and
 * passkey sign-in (/login/passkey). Checks made once signed in use the session as their proof
 * instead (signedInBrowser).
 */
@Injectable()
export class DeviceCookies implements OnModuleInit {
  private key = '';

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
    private readonly users: UsersService,
  ) {}

  async onModuleInit(): Promise<void> {
    this.key = await this.secrets.get(PURPOSE);
  }

  /** `__Secure-` on https: `__Host-` would need Path=/, and the cookie is only for /login. */
  get name(): string {
    return this.config.secureCookies ? '__Secure-prospect_device' : 'prospect_device';
  }

  /**
   * The request's device cookie (its id) when it is genuine and vouches for this account (its
   * normalized e-mail) as it is now, else null. Only a genuine cookie for this account costs a
   * read of the account (its epoch): a request without one asks nothing.
   */
  async trustedFor(req: Request, email: string): Promise<RecognisedBrowser | null> {
    const value = readCookie(req, this.name);
    if (!value || value.length > 512) return null;
    const cookie = open<DeviceCookie>(this.key, PURPOSE, PURPOSE, Buffer.from(value, 'base64url'));
    if (cookie?.account !== accountKey(email) || typeof cookie.nonce !== 'string' || typeof cookie.user !== 'string' || typeof cookie.epoch !== 'number') return null;
    const account = await this.users.findByEmail(email);
    return account?.id === cookie.user && account.credentialEpoch === cookie.epoch ? (cookie.nonce as RecognisedBrowser) : null;
  }

  /** After a sign-in (or a new password by a reset link): a new cookie for this account as it is now (a new id, so old failures stay with the old one). */
  issue(res: Response, account: CookieAccount): void {
    const cookie: DeviceCookie = { user: account.id, account: accountKey(account.email), epoch: account.credentialEpoch, nonce: randomBytes(16).toString('base64url') };
    res.cookie(this.name, seal(this.key, PURPOSE, PURPOSE, cookie).toString('base64url'), {
      httpOnly: true,
      secure: this.config.secureCookies,
      sameSite: 'strict',
      path: '/login',
      maxAge: YEAR_SECONDS * 1000,
    });
  }
}

/**
 * The recognised browser of a check made by a signed-in person (sudo, a password or address
 * change, deletion, a code in sudo mode): the signed-in session itself, by the hash of its id;
 * null when the request is not signed in (a half-signed-in session is not).
 *
 * Why the session and not the device cookie sent to more paths: every such check comes from a
 * signed-in page, and a session is the stronger proof of the two. It is a whole sign-in of this
 * very account (with every factor it asks for), which an attacker who merely knows or guesses
 * the password cannot get, and it ends with the account's sessions (a password change, "sign out
 * everywhere", a disabled account), where a device cookie lives a year and stays valid across
 * them. It is already sent to every page; widening the device cookie's path to `/` would send a
 * year-long credential with every request and rename it (`__Host-` on https), dropping every
 * cookie issued so far. Counted per session, a stolen session gets 5 wrong passwords or codes
 * per 15 minutes and blocks only itself, never its owner's other browsers, and a thief cannot
 * make more sessions without signing in.
 */
export function signedInBrowser(req: Request): RecognisedBrowser | null {
  return req.webUser && req.sessionID ? (`session:${sha256(req.sessionID).toString('base64url')}` as RecognisedBrowser) : null;
}
