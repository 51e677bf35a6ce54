import { Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import * as oidc from 'openid-client';
import { Clock } from '../common/clock.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { type IdentityProviderRow, IdentityProvidersRepository } from './identity-providers.repository.js';
import { ProviderUnreachable, RelyingParty } from './relying-party.js';
import { type Flight, SignInFlights } from './sign-in-flights.js';

/** A provider's discovery document is read again at a sign-in when it is older than this. */
const REDISCOVER_AFTER_MS = 24 * 3600 * 1000;

/**
 * The way to a provider and back (FederationSignIn.begin): the flight this browser keeps, the
 * provider's authorization URL to send it to, and the redirect URI the provider sends it back to.
 */
@Injectable()
export class ProviderRedirect {
  /** Under FederationSignIn's name, which its lines had before this was split from it: whoever watches the log finds them where they were. */
  private readonly logger = new Logger('FederationSignIn');

  constructor(
    private readonly providers: IdentityProvidersRepository,
    private readonly relyingParty: RelyingParty,
    private readonly flights: SignInFlights,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /** The redirect URI to register at the provider. */
  redirectUri(providerId: string): string {
    return `${this.config.publicUrl}/login/sso/${providerId}/callback`;
  }

  /**
   * A new state, nonce and PKCE verifier kept in this browser's flight cookie; the authorization
   * URL of `provider` (an enabled one) to redirect to.
   */
  async begin(
    res: Response,
    provider: IdentityProviderRow,
    purpose: Flight['purpose'],
    options: { next: string; loginHint?: string; userId?: string; sessionId?: string },
  ): Promise<string> {
    const discovered = await this.withFreshMetadata(provider);
    const flight: Flight = {
      providerId: provider.id,
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      codeVerifier: oidc.randomPKCECodeVerifier(),
      at: this.clock.now().getTime(),
      next: options.next,
      purpose,
      ...(purpose === 'sudo' ? { userId: options.userId, session: sha256(options.sessionId ?? '').toString('base64url') } : {}),
    };
    const url = await this.relyingParty.authorizationUrl(discovered, this.redirectUri(provider.id), flight, { loginHint: options.loginHint, fresh: purpose === 'sudo' });
    this.flights.start(res, flight);
    return url;
  }

  /**
   * The provider, its discovery document read again when the stored one is over a day old (its
   * endpoints may move; its keys are fetched by the relying party as they rotate). A provider that
   * cannot be read keeps the document it had, and says so in the log.
   */
  private async withFreshMetadata(provider: IdentityProviderRow): Promise<IdentityProviderRow> {
    const now = this.clock.now();
    if (now.getTime() - provider.discoveredAt.getTime() < REDISCOVER_AFTER_MS) return provider;
    try {
      const { metadata } = await this.relyingParty.discover(provider.issuer, provider.clientId, 'unused: the document alone is read');
      await this.providers.rediscovered(provider.id, metadata, now);
      return { ...provider, metadata, discoveredAt: now, updatedAt: now };
    } catch (err) {
      if (!(err instanceof ProviderUnreachable)) throw err;
      this.logger.warn(`kept the stored OpenID configuration of ${provider.id}: ${err.message}`);
      return provider;
    }
  }
}
