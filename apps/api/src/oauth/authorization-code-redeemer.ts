import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { constantTimeEqual, sha256 } from '../common/secrets.js';
import { refusalToIssue } from '../grants/grant-rules.js';
import { ApprovingSessionEndedError, GrantsService } from '../grants/grants.service.js';
import { RefreshTokensService, type TokenPair } from '../refresh-tokens/refresh-tokens.service.js';
import { TokensService } from '../tokens/tokens.service.js';
import { AuthorizationCodesRepository, type CodeRow } from './authorization-codes.repository.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AppConfig } from '../config/app-config.js';

/** Why a code was not redeemed: every one is `invalid_grant` on the wire, worded by AuthorizationService. */
export type CodeRefusal = 'unknown' | 'replayed' | 'other_client' | 'expired' | 'redirect_uri' | 'pkce' | 'account';

/** What a redemption came to: a refusal, or the new family's first pair with what its ID token says. */
export type CodeRedemption =
  | { refused: CodeRefusal | 'client_disabled' }
  | { pair: TokenPair; code: CodeRow; account: { email: string; name: string; emailVerified: boolean } };

/** The PKCE S256 transform of a verifier (RFC 7636 §4.2). */
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/**
 * The transaction of a code exchange (AuthorizationService.exchange, RFC 6749 §4.1.3 with RFC 7636
 * §4.6): the code checked under its lock and used once, for a new grant (grants/) its tokens hang
 * off; a code presented again revokes every token it gave. The service words the outcome and signs
 * the ID token after the commit.
 */
@Injectable()
export class AuthorizationCodeRedeemer {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly clientRows: OAuthClientsRepository,
    private readonly codes: AuthorizationCodesRepository,
    private readonly tokens: TokensService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly grants: GrantsService,
    private readonly config: AppConfig,
  ) {}

  /** @param client the client, authenticated (ClientAuthentication). */
  redeem(client: OAuthClient, input: { code: string; redirectUri: string; codeVerifier: string }, ip: string | null): Promise<CodeRedemption> {
    return this.uow.run(async (tx): Promise<CodeRedemption> => {
      // The client first, then the code: the order a disable takes them in (OAuthClientsService).
      const current = await this.clientRows.sharedById(tx, client.id);
      if (!current || current.disabledAt) return { refused: 'client_disabled' };
      const code = await this.codes.lockByHash(tx, sha256(input.code));
      if (!code) return { refused: 'unknown' };
      const now = this.clock.now();
      if (code.used_at) {
        const revoked = code.grant_id ? await this.tokens.revokeFamily(code.grant_id, 'authorization code used twice', ip, tx) : 0;
        await this.codes.recordReplay(tx, { id: code.id, userId: code.user_id, clientId: code.client_id, grantId: code.grant_id }, revoked, now, ip);
        return { refused: 'replayed' };
      }
      if (code.client_id !== client.id) return { refused: 'other_client' };
      if (code.expires_at.getTime() <= now.getTime()) return { refused: 'expired' };
      if (code.redirect_uri !== input.redirectUri) return { refused: 'redirect_uri' };
      if (!constantTimeEqual(Buffer.from(s256(input.codeVerifier)), Buffer.from(code.code_challenge))) return { refused: 'pkce' };
      const account = await this.codes.lockAccount(tx, code.user_id, code.web_session);
      // The grant's rules (the client was checked live above, under its lock), and the browser session that signed in for the code still live.
      const grant = account && { revoked: false, account, approvedUnderEpoch: code.credential_epoch, clientDisabled: false, secondFactor: code.second_factor };
      if (!grant || refusalToIssue(grant, this.config) || !account.sessionLive) return { refused: 'account' };
      // The grant first, then the code used with its event, then its first pair.
      const grantId = await this.grants.create(tx, {
        userId: code.user_id,
        clientId: code.client_id,
        grantType: 'authorization_code',
        scope: code.scope,
        adminUntil: null,
        credentialEpoch: code.credential_epoch,
        amr: code.amr,
        authTime: code.auth_time,
        secondFactor: code.second_factor,
        webSession: code.web_session,
        createdAt: now,
      });
      await this.codes.redeem(tx, { id: code.id, clientId: code.client_id, userId: code.user_id, scope: code.scope }, grantId, now, ip);
      const pair = await this.refreshTokens.issueFirstPair(tx, { userId: code.user_id, label: current.name, ip, grantId, scope: code.scope, adminUntil: null });
      return { pair, code, account };
    }).catch((err: unknown) => {
      // The browser session that signed in for the code ended after it was checked above: as if it had been gone then.
      if (err instanceof ApprovingSessionEndedError) return { refused: 'account' } as const;
      throw err;
    });
  }
}
