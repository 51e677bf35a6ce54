import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { ServerSecrets } from '../../server-secrets/server-secrets.js';
import { SealedCookie } from '../../web-sessions/sealed-cookie.js';

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
  private cookie?: SealedCookie<PasskeyCeremony>;

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
    private readonly clock: Clock,
  ) {}

  async onModuleInit(): Promise<void> {
    const spec = {
      name: 'prospect_passkey',
      purpose: PURPOSE,
      path: PATH,
      sameSite: 'strict' as const,
      lifetimeSeconds: CEREMONY_SECONDS,
      maxLength: 1024,
      holds: (ceremony: PasskeyCeremony) => typeof ceremony.challenge === 'string',
    };
    this.cookie = new SealedCookie(spec, await this.secrets.get(PURPOSE), this.config.secureCookies, this.clock);
  }

  get name(): string {
    return this.cookie!.name;
  }

  /** Keeps `challenge` in this browser, replacing any ceremony it had. */
  start(res: Response, challenge: string): void {
    this.cookie!.set(res, { challenge, at: this.clock.now().getTime() });
  }

  /** This browser's ceremony, if it is genuine and recent; the cookie is cleared either way. */
  take(req: Request, res: Response): PasskeyCeremony | null {
    return this.cookie!.take(req, res);
  }
}
