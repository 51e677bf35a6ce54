import type { Request, Response } from 'express';
import type { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { readCookie } from './request-cookies.js';

/** What a sealed cookie keeps: anything stamped with when it was made (ms). */
export interface Stamped {
  at: number;
}

/** How one kind of sealed cookie is made and sent. */
export interface SealedCookieSpec<T extends Stamped> {
  /** Its name, `__Secure-` prefixed on https. */
  name: string;
  /** The server key's purpose (ServerSecrets) and the seal's context. */
  purpose: string;
  /** Where the browser sends it: only the routes that read it. */
  path: string;
  /**
   * 'none' for a cookie that must come back with another site's POST (a SAML IdP's answer to the
   * ACS); browsers take SameSite=None only with Secure, so on http (development, tests) it is sent
   * as 'lax', which reaches a same-site IdP only.
   */
  sameSite: 'lax' | 'strict' | 'none';
  lifetimeSeconds: number;
  /** A longer value is no cookie of ours, and is not opened. */
  maxLength: number;
  /** Whether what opened is the shape this cookie holds. */
  holds(value: T): boolean;
}

/**
 * A short-lived value kept in the browser's own cookie, sealed (AES-256-GCM under a server key,
 * common/sealed.ts) rather than stored: a sign-in sent to a provider (federation/sign-in-flights.ts),
 * a passkey challenge of the sign-in page (web/sign-in/passkey-ceremonies.ts). Starting one costs no row;
 * taking it clears the cookie, and only a genuine, recent one is answered.
 */
export class SealedCookie<T extends Stamped> {
  constructor(
    private readonly spec: SealedCookieSpec<T>,
    private readonly key: string,
    private readonly secure: boolean,
    private readonly clock: Clock,
  ) {}

  get name(): string {
    return this.secure ? `__Secure-${this.spec.name}` : this.spec.name;
  }

  /** Keeps `value` in this browser, replacing any it had. */
  set(res: Response, value: T): void {
    res.cookie(this.name, seal(this.key, this.spec.purpose, this.spec.purpose, value).toString('base64url'), {
      ...this.attributes(),
      maxAge: this.spec.lifetimeSeconds * 1000,
    });
  }

  /** This browser's value, if it is genuine and recent; the cookie is cleared either way. */
  take(req: Request, res: Response): T | null {
    const raw = readCookie(req, this.name);
    if (raw === null) return null;
    res.clearCookie(this.name, this.attributes());
    if (raw.length > this.spec.maxLength) return null;
    const value = open<T>(this.key, this.spec.purpose, this.spec.purpose, Buffer.from(raw, 'base64url'));
    if (!value || typeof value.at !== 'number' || !this.spec.holds(value)) return null;
    const age = this.clock.now().getTime() - value.at;
    return age >= 0 && age <= this.spec.lifetimeSeconds * 1000 ? value : null;
  }

  private attributes() {
    const sameSite = this.spec.sameSite === 'none' && !this.secure ? 'lax' : this.spec.sameSite;
    return { httpOnly: true, secure: this.secure, sameSite, path: this.spec.path };
  }
}
