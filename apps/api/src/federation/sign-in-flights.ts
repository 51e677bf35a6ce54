import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { SealedCookie } from '../web-sessions/sealed-cookie.js';

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
  private cookie?: SealedCookie<Flight>;

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
    private readonly clock: Clock,
  ) {}

  async onModuleInit(): Promise<void> {
    const spec = { name: 'prospect_sso', purpose: PURPOSE, path: '/login/sso', sameSite: 'lax' as const, lifetimeSeconds: FLIGHT_SECONDS, maxLength: 4096, holds: () => true };
    this.cookie = new SealedCookie(spec, await this.secrets.get(PURPOSE), this.config.secureCookies, this.clock);
  }

  get name(): string {
    return this.cookie!.name;
  }

  start(res: Response, flight: Flight): void {
    this.cookie!.set(res, flight);
  }

  /** This browser's flight, if it is genuine and recent; the cookie is cleared either way. */
  take(req: Request, res: Response): Flight | null {
    return this.cookie!.take(req, res);
  }
}
