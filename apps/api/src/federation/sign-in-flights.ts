import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { open, seal } from '../common/sealed.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { readCookie } from '../web-sessions/request-cookies.js';

/** How long a browser may take at the provider before coming back. */
export const FLIGHT_SECONDS = 10 * 60;
const PURPOSE = 'federation-flight';

/** A sign-in sent to a provider and not back yet: what its answer must match, and what it was for. */
export interface Flight {
  providerId: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  /** When it left (ms). */
  at: number;
  /** Where to go once signed in (already checked by safeNext). */
  next: string;
  /** A sign-in, or sudo mode's fresh confirmation by a signed-in person. */
  purpose: 'sign-in' | 'sudo';
  /** Sudo: who asked, and the hash of their session id: the answer counts only in that session. */
  userId?: string;
  session?: string;
}

/**
 * The sign-in under way at a provider lives in a cookie of its own, sealed (AES-256-GCM under a
 * server key), for ten minutes, sent only to `/login/sso` (where the provider sends the browser
 * back): starting a sign-in stores nothing in the database, so following a "Continue with …"
 * link costs no row. SameSite=Lax, as the provider's redirect back is a top-level GET from
 * another site. The answer clears it in the browser (the code it carries is single-use at the
 * provider besides), and an answer that comes to a browser that did not start it (login CSRF)
 * finds none to match.
 */
@Injectable()
export class SignInFlights implements OnModuleInit {
  private key = '';

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
    private readonly clock: Clock,
  ) {}

  async onModuleInit(): Promise<void> {
    this.key = await this.secrets.get(PURPOSE);
  }

  get name(): string {
    return this.config.secureCookies ? '__Secure-prospect_sso' : 'prospect_sso';
  }

  start(res: Response, flight: Flight): void {
    res.cookie(this.name, seal(this.key, PURPOSE, PURPOSE, flight).toString('base64url'), {
      httpOnly: true,
      secure: this.config.secureCookies,
      sameSite: 'lax',
      path: '/login/sso',
      maxAge: FLIGHT_SECONDS * 1000,
    });
  }

  /** This browser's flight, if it is genuine and recent; the cookie is cleared either way. */
  take(req: Request, res: Response): Flight | null {
    const value = readCookie(req, this.name);
    if (value === null) return null;
    res.clearCookie(this.name, { httpOnly: true, secure: this.config.secureCookies, sameSite: 'lax', path: '/login/sso' });
    if (value.length > 4096) return null;
    const flight = open<Flight>(this.key, PURPOSE, PURPOSE, Buffer.from(value, 'base64url'));
    if (!flight || typeof flight.at !== 'number' || this.clock.now().getTime() - flight.at > FLIGHT_SECONDS * 1000) return null;
    return flight;
  }
}
