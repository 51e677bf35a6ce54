import { Injectable } from '@nestjs/common';
import {
  CLIENT_ASSERTION_MAX_LIFETIME_SECONDS,
  ERROR_CODES,
  type ErrorCode,
  OAUTH_ROUTES,
  SERVICE_ACCOUNT_SECRET_PREFIX,
  SERVICE_ACCOUNT_TOKEN_TTL_SECONDS,
  SERVICE_NAME,
} from '@prospect/contract';
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, importJWK, type JWK, jwtVerify } from 'jose';
import { AuditService } from '../audit/audit.service.js';
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { TokensService } from '../tokens/tokens.service.js';
import { type ServiceAccountRow, ServiceAccountsRepository } from './service-accounts.repository.js';
import { algOf, ASSERTION_SIGNING_ALGS } from './service-accounts.service.js';

/** How a token request authenticated its client (oauth/'s controller read the header and the form). */
export type PresentedClientCredentials =
  | { method: 'client_secret_basic' | 'client_secret_post'; clientId: string; secret: string }
  | { method: 'private_key_jwt'; clientId: string | undefined; assertion: string };

/** The answer of a client credentials grant (RFC 6749 §4.4.3): no refresh token. */
export interface ClientCredentialsTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

/** Leeway for the clocks of the machine that signed an assertion and ours (`exp`, `iat`, `nbf`). */
export const CLOCK_SKEW_SECONDS = 30;

const BASIC_CHALLENGE = { 'WWW-Authenticate': `Basic realm="${SERVICE_NAME}"` };

/** RFC 6749 §5.2: invalid_client is 401 (with the scheme's challenge) where the client used Basic, 400 otherwise. */
const refusal = (presented: PresentedClientCredentials, description: string) =>
  presented.method === 'client_secret_basic'
    ? new ApiException(401, ERROR_CODES.invalidClient, description, BASIC_CHALLENGE)
    : new ApiException(400, ERROR_CODES.invalidClient, description);

const oauthError = (code: ErrorCode, description: string) => new ApiException(400, code, description);

/**
 * The client credentials grant (RFC 6749 §4.4) for service accounts: `client_secret_basic`,
 * `client_secret_post` and `private_key_jwt` (RFC 7523 §2.2, §3). Failures are counted before
 * the work (RateLimits.attemptClientAuthentication). The account, the credential that
 * authenticated it and the token are read and written in one transaction under share locks, so
 * a disable, a narrowing or a deleted credential either comes first (and refuses) or waits, and
 * then revokes this token with the rest.
 */
@Injectable()
export class ClientCredentialsGrant {
  constructor(
    private readonly accounts: ServiceAccountsRepository,
    private readonly uow: UnitOfWork,
    private readonly tokens: TokensService,
    private readonly audit: AuditService,
    private readonly limits: RateLimits,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async grant(presented: PresentedClientCredentials, requestedScope: string | undefined, ip: string): Promise<ClientCredentialsTokenResponse> {
    const clientId = presented.method === 'private_key_jwt' ? assertionClientId(presented) : presented.clientId;
    await this.limits.attemptClientAuthentication(ip);
    const now = this.clock.now();
    // Past the credential check, a refusal (a disabled account, a scope it lacks) is no guess: its point goes back.
    let authenticated = false;
    const answer = await this.uow.run(async (tx) => {
      const account = await this.accounts.shareLockByClientId(tx, clientId);
      if (!account) throw refusal(presented, `Unknown client_id: ${clientId}.`);
      const credential = presented.method === 'private_key_jwt' ? await this.verifyAssertion(tx, account, presented, now) : await this.checkSecret(tx, account, presented, now);
      authenticated = true;
      if (account.disabledAt) throw refusal(presented, `The service account ${clientId} is disabled: ask an admin of its organization.`);
      const scope = grantedScope(requestedScope, account);
      const use = await this.accounts.recordUse(tx, credential.kind, credential.id, now, ip);
      if (!use.usedBefore || use.previousIp !== ip) {
        await this.audit.record(
          'org.service_account_new_address',
          { userId: account.id, ip, organizationId: account.organizationId, detail: { serviceAccountId: account.id, name: account.name, credential: credential.kind, credentialId: credential.id, address: ip }, at: now },
          tx,
        );
      }
      return this.issueIn(tx, account, scope, ip, { endsBy: credential.endsBy });
    }).catch(async (err: unknown) => {
      if (authenticated) await this.limits.clientAuthenticationSucceeded(ip);
      throw err;
    });
    await this.limits.clientAuthenticationSucceeded(ip);
    return answer;
  }

  /**
   * Issues a service account's access token in `tx` (its row share-locked by the caller): the one
   * place such a token is made, for the client credentials grant and for any later grant that
   * authenticates a service account another way (token exchange). At most an hour, no refresh token.
   * It ends with what it was issued under: by `endsBy` (a secret's expiry), and with the federation
   * it was exchanged through (`federationId`: deleting that federation revokes it, and only its own).
   */
  async issueIn(tx: Tx, account: ServiceAccountRow, scope: string, ip: string | null, under: { endsBy?: Date | null; federationId?: string }): Promise<ClientCredentialsTokenResponse> {
    const issued = await this.tokens.issue(
      { userId: account.id, origin: 'service_account', label: account.name, scope, ttlSeconds: SERVICE_ACCOUNT_TOKEN_TTL_SECONDS, ip, endsBy: under.endsBy ?? null, federationId: under.federationId ?? null },
      tx,
    );
    const expiresIn = Math.max(0, Math.round((issued.expiresAt.getTime() - this.clock.now().getTime()) / 1000));
    return { access_token: issued.accessToken, token_type: 'Bearer', expires_in: expiresIn, scope };
  }

  private async checkSecret(tx: Tx, account: ServiceAccountRow, presented: PresentedClientCredentials & { secret: string }, now: Date) {
    // Obvious garbage costs no lookup; it is refused as a wrong secret is (and was counted as one).
    const secret = looksLikeSecret(presented.secret, SERVICE_ACCOUNT_SECRET_PREFIX) ? await this.accounts.shareLockSecret(tx, account.id, sha256(presented.secret)) : undefined;
    if (!secret) throw refusal(presented, `Wrong client_secret for ${account.clientId}.`);
    if (secret.expiresAt && secret.expiresAt.getTime() <= now.getTime()) throw refusal(presented, `This client_secret of ${account.clientId} has expired: create another.`);
    // A token never outlives the secret it was issued with.
    return { kind: 'secret' as const, id: secret.id, endsBy: secret.expiresAt };
  }

  /**
   * RFC 7523 §3: signed by a registered key of the account (by `kid`, or its only key), `iss` and
   * `sub` the client_id, `aud` the token endpoint or the issuer, an `exp` at most
   * CLIENT_ASSERTION_MAX_LIFETIME_SECONDS ahead, and a `jti` never accepted before until its `exp`.
   */
  private async verifyAssertion(tx: Tx, account: ServiceAccountRow, presented: PresentedClientCredentials & { assertion: string }, now: Date) {
    const keys = await this.accounts.shareLockKeys(tx, account.id);
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(presented.assertion).kid;
    } catch {
      throw refusal(presented, 'client_assertion is not a JWT.');
    }
    const key = kid !== undefined ? keys.find((k) => k.kid === kid) : keys.length === 1 ? keys[0] : undefined;
    if (!key) throw refusal(presented, kid !== undefined ? `No key with kid “${kid}” is registered for ${account.clientId}.` : `Name the signing key with \`kid\`: ${account.clientId} has ${keys.length} keys.`);
    const alg = algOf(key.jwk)!;
    const base = this.config.publicUrl;
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(presented.assertion, await importJWK(key.jwk as JWK, alg), {
        algorithms: [alg].filter((a) => ASSERTION_SIGNING_ALGS.includes(a)),
        issuer: account.clientId,
        subject: account.clientId,
        audience: [base + OAUTH_ROUTES.token, base],
        requiredClaims: ['exp', 'jti'],
        currentDate: now,
        clockTolerance: CLOCK_SKEW_SECONDS,
      }));
    } catch (err) {
      throw refusal(presented, `client_assertion refused: ${err instanceof joseErrors.JOSEError ? err.message : 'it could not be verified'}.`);
    }
    const exp = claims.exp!;
    if (exp > now.getTime() / 1000 + CLIENT_ASSERTION_MAX_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) {
      throw refusal(presented, `client_assertion lives too long: its exp may be at most ${CLIENT_ASSERTION_MAX_LIFETIME_SECONDS} seconds ahead.`);
    }
    if (typeof claims.jti !== 'string' || !claims.jti || claims.jti.length > 200) throw refusal(presented, 'client_assertion needs a jti of 1 to 200 characters.');
    // Kept until its exp (with the skew): past it the assertion is refused as expired anyway.
    const kept = new Date((exp + CLOCK_SKEW_SECONDS) * 1000);
    if (!(await this.accounts.useAssertion(tx, account.id, claims.jti, kept, now))) throw refusal(presented, 'This client_assertion was used already (its jti): sign a new one for every request.');
    return { kind: 'key' as const, id: key.id, endsBy: null };
  }
}

/** The client an assertion names (`iss`, which must be its `sub` and any client_id sent with it), read before it is verified. */
function assertionClientId(presented: PresentedClientCredentials & { method: 'private_key_jwt' }): string {
  let claims;
  try {
    claims = decodeJwt(presented.assertion);
  } catch {
    throw refusal(presented, 'client_assertion is not a JWT.');
  }
  if (typeof claims.iss !== 'string' || !claims.iss || claims.iss.length > 200) throw refusal(presented, 'client_assertion has no iss (the client_id).');
  if (presented.clientId !== undefined && presented.clientId !== claims.iss) throw oauthError(ERROR_CODES.invalidRequest, 'client_id differs from the client_assertion’s iss.');
  return claims.iss;
}

/**
 * RFC 6749 §3.3: the scopes asked for, each the account's; none asked for: all of its scopes.
 * @throws invalid_scope naming the ones it does not have.
 */
export function grantedScope(requested: string | undefined, account: ServiceAccountRow): string {
  const held = account.scopes.split(' ').filter(Boolean);
  if (requested === undefined || requested.trim() === '') return held.join(' ');
  const asked = [...new Set(requested.split(' ').filter(Boolean))];
  const beyond = asked.filter((s) => !held.includes(s));
  if (beyond.length) throw oauthError(ERROR_CODES.invalidScope, `The service account ${account.clientId} does not hold: ${beyond.join(' ')}.`);
  return held.filter((s) => asked.includes(s)).join(' ');
}
