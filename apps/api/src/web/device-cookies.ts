import { randomBytes } from 'node:crypto';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { open, seal } from '../common/sealed.js';
import { AppConfig } from '../config/app-config.js';
import { accountKey } from '../rate-limits/rate-limits.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';

const YEAR_SECONDS = 365 * 24 * 3600;
const PURPOSE = 'device-cookie';

/** What a device cookie holds, sealed: which account it vouches for, and its own id. */
interface DeviceCookie {
  /** accountKey() of the e-mail it signed in with: the cookie holds no address. */
  account: string;
  /** Its failures are counted under this id (rate-limits.ts). */
  nonce: string;
}

/**
 * OWASP's "device cookies" against account lockout: a browser that signed in to an account
 * receives a cookie for it, sealed (AES-256-GCM) under a key only the server holds. Sign-in
 * attempts that carry a valid one for the account they try are limited per cookie; attempts
 * without one are limited per account and per address. So an attacker hammering an account
 * locks out only browsers that never signed in to it: the owner's browser still signs in
 * with the right password.
 *
 * One cookie per browser, for the account it last signed in to. It is sent only to /login.
 */
@Injectable()
export class DeviceCookies implements OnModuleInit {
  private key = '';

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
  ) {}

  async onModuleInit(): Promise<void> {
    this.key = await this.secrets.get(PURPOSE);
  }

  /** `__Secure-` on https: `__Host-` would need Path=/, and the cookie is only for /login. */
  get name(): string {
    return this.config.secureCookies ? '__Secure-prospect_device' : 'prospect_device';
  }

  /** The id of the request's device cookie when it is genuine and vouches for this account, else null. */
  trustedFor(req: Request, email: string): string | null {
    const value = readCookie(req, this.name);
    if (!value || value.length > 512) return null;
    const cookie = open<DeviceCookie>(this.key, PURPOSE, PURPOSE, Buffer.from(value, 'base64url'));
    return cookie?.account === accountKey(email) && typeof cookie.nonce === 'string' ? cookie.nonce : null;
  }

  /** After a successful sign-in: a new cookie for this account (a new id, so old failures stay with the old one). */
  issue(res: Response, email: string): void {
    const cookie: DeviceCookie = { account: accountKey(email), nonce: randomBytes(16).toString('base64url') };
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
 * One cookie's value from the Cookie header. Express parses no cookies of its own, and this is
 * the only one the pages read besides the session's (which express-session reads itself), so a
 * cookie parser on every page would be work for nothing. The value is base64url: nothing to decode.
 */
function readCookie(req: Request, name: string): string | null {
  for (const pair of (req.headers.cookie ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return null;
}
