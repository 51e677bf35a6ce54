import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { ServerSecrets } from '../../server-secrets/server-secrets.js';
import { SealedCookie } from '../../web-sessions/sealed-cookie.js';
import { FLIGHT_SECONDS } from '../sign-in-flights.js';

const PURPOSE = 'saml-flight';

/** An AuthnRequest sent to an organization's IdP and not answered yet. */
export interface SamlFlight {
  /** The organization whose connection it went through. */
  slug: string;
  /** The AuthnRequest's ID: the Response's InResponseTo must be it. */
  requestId: string;
  /** When it left (ms). */
  at: number;
  /** Where to go once signed in (already checked by safeNext). */
  next: string;
  /**
   * A sign-in; an admin's "Test sign-in" (shows the result, signs nobody in); sudo mode's fresh
   * sign-in; or sudo's checked answer on its way from the ACS (a cross-site POST, which brings no
   * session cookie) to /saml/{slug}/sudo-done (a top-level GET, which does).
   */
  purpose: 'sign-in' | 'test' | 'sudo' | 'sudo-answer';
  /** Test, sudo: the person who started it. */
  userId?: string;
  /** Sudo: the hash of their session id (the answer counts only in that session). */
  session?: string;
  /** Sudo's checked answer: the identity the IdP vouched for, afresh. */
  answer?: { subject: string; email?: string; acr?: string };
}

/**
 * The AuthnRequest under way lives in a cookie of its own, sealed, for ten minutes, sent only to
 * `/saml` (the ACS), as the OpenID flight does (sign-in-flights.ts). It stands in for node-saml's
 * request-id cache: replicas share nothing in memory, and a Response whose InResponseTo is not
 * the request THIS browser started (another browser's, an attacker's own: login CSRF) matches
 * nothing. SameSite=None (with Secure): the IdP's answer is a POST from its own site, which a Lax
 * cookie would not come back with.
 */
@Injectable()
export class SamlFlights implements OnModuleInit {
  private cookie?: SealedCookie<SamlFlight>;

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
    private readonly clock: Clock,
  ) {}

  async onModuleInit(): Promise<void> {
    const spec = { name: 'prospect_saml', purpose: PURPOSE, path: '/saml', sameSite: 'none' as const, lifetimeSeconds: FLIGHT_SECONDS, maxLength: 4096, holds: (f: SamlFlight) => typeof f.requestId === 'string' && typeof f.slug === 'string' };
    this.cookie = new SealedCookie(spec, await this.secrets.get(PURPOSE), this.config.secureCookies, this.clock);
  }

  start(res: Response, flight: SamlFlight): void {
    this.cookie!.set(res, flight);
  }

  /** This browser's flight, if it is genuine and recent; the cookie is cleared either way. */
  take(req: Request, res: Response): SamlFlight | null {
    return this.cookie!.take(req, res);
  }
}
