import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { AppConfig } from '../config/app-config.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { readCookie } from '../web-sessions/request-cookies.js';

/** How long the sign-in page's passkey prompt may stay open (the browser's own prompt times out sooner). */
export const CEREMONY_SECONDS = 5 * 60;
const PURPOSE = 'passkey-sign-in';
/** Where the cookie is sent: the sign-in's answer, and the next options request, which replaces it. */
const PATH = '/login/passkey';

/** A passkey sign-in under way: the challenge, and when it was issued (ms). */
export interface PasskeyCeremony {
  challenge: string;
  at: number;
}

/**
 * The sign-in page's passkey challenge, sealed (AES-256-GCM under a server key) in a cookie of its
 * own for five minutes, rather than in a session row: anyone may ask for options without signing
 * in, so each request used to store a `web_sessions` row, unlimited (issue #43, finding 6). Now
 * asking stores nothing, as showing a form does (the anonymous CSRF cookie) and as a sign-in at an
 * identity provider does (federation/sign-in-flights.ts). SameSite=Strict: only the page's own
 * script posts to these routes. The answer clears it; since a cookie can be presented again, the
 * passkey that signs in records when its challenge was issued, and refuses that challenge and any
 * older one after (PasskeysService.authenticate), so a challenge signs in once.
 */
@Injectable()
export class PasskeyCeremonies implements OnModuleInit {
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
    return this.config.secureCookies ? '__Secure-prospect_passkey' : 'prospect_passkey';
  }

  /** Keeps `challenge` in this browser, replacing any ceremony it had. */
  start(res: Response, challenge: string): void {
    const ceremony: PasskeyCeremony = { challenge, at: this.clock.now().getTime() };
    res.cookie(this.name, seal(this.key, PURPOSE, PURPOSE, ceremony).toString('base64url'), { ...this.attributes(), maxAge: CEREMONY_SECONDS * 1000 });
  }

  /** This browser's ceremony, if it is genuine and recent; the cookie is cleared either way. */
  take(req: Request, res: Response): PasskeyCeremony | null {
    const value = readCookie(req, this.name);
    if (value === null) return null;
    res.clearCookie(this.name, this.attributes());
    if (value.length > 1024) return null;
    const ceremony = open<PasskeyCeremony>(this.key, PURPOSE, PURPOSE, Buffer.from(value, 'base64url'));
    if (!ceremony || typeof ceremony.challenge !== 'string' || typeof ceremony.at !== 'number') return null;
    const age = this.clock.now().getTime() - ceremony.at;
    return age >= 0 && age <= CEREMONY_SECONDS * 1000 ? ceremony : null;
  }

  private attributes() {
    return { httpOnly: true, secure: this.config.secureCookies, sameSite: 'strict' as const, path: PATH };
  }
}
