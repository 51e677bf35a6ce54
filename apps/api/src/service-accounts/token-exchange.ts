import { Injectable } from '@nestjs/common';
import {
  ACCESS_TOKEN_TOKEN_TYPE,
  ERROR_CODES,
  type ErrorCode,
  SUBJECT_TOKEN_MAX_AGE_SECONDS,
  SUBJECT_TOKEN_TYPES,
  type TokenExchangeResponse,
  type TokenExchangeTokenRequest,
} from '@prospect/contract';
import { decodeJwt, errors as joseErrors, type JWTPayload, jwtVerify } from 'jose';
import { AuditService } from '../audit/audit.service.js';
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { findUnreadableInput } from '../common/well-formed-text.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { failedCondition } from './claim-conditions.js';
import { CLOCK_SKEW_SECONDS, ClientCredentialsGrant, grantedScope } from './client-credentials.js';
import { IssuerKeys, IssuerUnavailable } from './issuer-keys.js';
import { type FederationRow, ServiceAccountFederationsRepository } from './service-account-federations.repository.js';
import { type ServiceAccountRow, ServiceAccountsRepository } from './service-accounts.repository.js';

/** The signature algorithms a trusted issuer may sign with: asymmetric only (a shared secret would be no issuer's proof). */
const SUBJECT_TOKEN_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** The one thing a refused caller is told: never which condition failed (the organization's log says). */
const REFUSED = 'The subject_token is not accepted for this service account.';

const oauthError = (code: ErrorCode, description: string) => new ApiException(400, code, description);

/** A refusal past the client_id: recorded in the organization's log with the condition that failed, answered as `answer`. */
class ExchangeRefused extends Error {
  constructor(
    readonly condition: string,
    readonly answer: ApiException = oauthError(ERROR_CODES.invalidGrant, REFUSED),
    readonly known: { issuer?: string; sub?: string; federationId?: string } = {},
  ) {
    super(condition);
  }
}

/** A subject token that passed every check: its claims and the federation it met. */
interface Accepted {
  claims: JWTPayload & { iss: string; jti: string; exp: number };
  federation: FederationRow;
}

/** Text from a token for the log: clipped, so a claim cannot fill it (and kept well formed: a cut through an emoji's surrogate pair is no text Postgres stores). */
const clip = (value: unknown) => (typeof value === 'string' ? value.slice(0, 300).toWellFormed() : undefined);

/**
 * Workload identity federation (issue #45): the token exchange grant (RFC 8693) for service
 * accounts. A CI's signed OIDC token (the subject token) is exchanged for the account's
 * short-lived access token when an issuer the account trusts signed it (its discovered JWKS,
 * IssuerKeys), it is in date (`exp`, `nbf`, `iat` with CLOCK_SKEW_SECONDS, no older than
 * SUBJECT_TOKEN_MAX_AGE_SECONDS), names the federation's audience, meets all of its conditions,
 * and its `jti` was never exchanged before. There is no client secret: the subject token is the
 * credential, so a failure counts against the client_id and the address as a wrong secret does
 * (RateLimits.attemptClientAuthentication, before the work). The caller learns only that the
 * token was refused; the organization's log names the condition that failed.
 *
 * The token is issued as client credentials' are (ClientCredentialsGrant.issueIn: at most an hour,
 * no refresh token) in one transaction that share-locks the account and the federation and records
 * the `jti`: disabling the account, narrowing its scopes or deleting the federation either comes
 * first (and refuses) or waits, then revokes this token (with the account's others; a deleted
 * federation only the tokens exchanged through it, which the token records).
 */
@Injectable()
export class TokenExchangeGrant {
  constructor(
    private readonly accounts: ServiceAccountsRepository,
    private readonly federations: ServiceAccountFederationsRepository,
    private readonly issuerKeys: IssuerKeys,
    private readonly clientCredentials: ClientCredentialsGrant,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly limits: RateLimits,
    private readonly clock: Clock,
  ) {}

  async exchange(request: TokenExchangeTokenRequest, ip: string): Promise<TokenExchangeResponse> {
    checkRequestShape(request);
    const clientId = request.client_id;
    await this.limits.attemptClientAuthentication(ip);
    const account = await this.accounts.findByClientId(clientId);
    if (!account) throw oauthError(ERROR_CODES.invalidClient, `Unknown client_id: ${clientId}.`);
    const now = this.clock.now();
    // Past the subject token's checks, a refusal (a disabled account, a replay, a scope it lacks) is no guess: its point goes back.
    let authenticated = false;
    try {
      const accepted = await this.verify(account, request.subject_token, now);
      authenticated = true;
      const answer = await this.uow.run(async (tx) => {
        const locked = await this.accounts.shareLockByClientId(tx, clientId);
        if (!locked) throw oauthError(ERROR_CODES.invalidClient, `Unknown client_id: ${clientId}.`);
        const known = { issuer: accepted.claims.iss, sub: clip(accepted.claims.sub), federationId: accepted.federation.id };
        if (locked.disabledAt) throw new ExchangeRefused('account_disabled', oauthError(ERROR_CODES.invalidClient, `The service account ${clientId} is disabled: ask an admin of its organization.`), known);
        if (!(await this.federations.shareLock(tx, locked.id, accepted.federation.id))) throw new ExchangeRefused('federation_deleted', undefined, known);
        const scope = grantedScope(request.scope, locked);
        // Kept until its exp (with the skew): past it the token is refused as expired anyway.
        const keptUntil = new Date((accepted.claims.exp + CLOCK_SKEW_SECONDS) * 1000);
        if (!(await this.federations.useSubjectToken(tx, accepted.claims.iss, accepted.claims.jti, keptUntil, now))) throw new ExchangeRefused('jti_replayed', undefined, known);
        const conditions = accepted.federation.conditions;
        await this.audit.record(
          'org.service_account_token_exchange',
          {
            userId: locked.id,
            ip,
            organizationId: locked.organizationId,
            at: now,
            detail: {
              serviceAccountId: locked.id,
              name: locked.name,
              clientId,
              federationId: accepted.federation.id,
              issuer: accepted.claims.iss,
              sub: clip(accepted.claims.sub) ?? null,
              // The conditions met, and the values that met them.
              conditions: JSON.stringify(conditions),
              matched: JSON.stringify(Object.fromEntries(Object.keys(conditions).map((name) => [name, clip(String(accepted.claims[name]))]))),
              scope,
            },
          },
          tx,
        );
        const issued = await this.clientCredentials.issueIn(tx, locked, scope, ip, { federationId: accepted.federation.id });
        return { access_token: issued.access_token, issued_token_type: ACCESS_TOKEN_TOKEN_TYPE, token_type: issued.token_type, expires_in: issued.expires_in, scope: issued.scope } as const;
      });
      await this.limits.clientAuthenticationSucceeded(ip);
      return answer;
    } catch (err) {
      if (authenticated) await this.limits.clientAuthenticationSucceeded(ip);
      if (!(err instanceof ExchangeRefused)) throw err;
      await this.audit.record('org.service_account_exchange_refused', {
        userId: account.id,
        ip,
        organizationId: account.organizationId,
        at: now,
        detail: { serviceAccountId: account.id, name: account.name, clientId, condition: err.condition, issuer: err.known.issuer ?? null, sub: err.known.sub ?? null, federationId: err.known.federationId ?? null },
      });
      throw err.answer;
    }
  }

  /**
   * The subject token's checks, in order: a JWT naming an issuer this account trusts, signed by one
   * of that issuer's keys, in date, with a `jti`, for the audience of one of its federations, whose
   * conditions its claims meet. @throws ExchangeRefused naming the first that fails.
   */
  private async verify(account: ServiceAccountRow, subjectToken: string, now: Date): Promise<Accepted> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(subjectToken);
    } catch {
      throw new ExchangeRefused('not_a_jwt');
    }
    // A NUL or an unpaired surrogate in a claim (a JSON escape away) cannot be stored as text: refused here, not a 500 from the log's insert.
    if (findUnreadableInput(unverified)) throw new ExchangeRefused('malformed');
    const issuer = unverified.iss;
    if (typeof issuer !== 'string' || !issuer || issuer.length > 500) throw new ExchangeRefused('issuer');
    // Only an issuer this account trusts is ever asked for its keys.
    const trusting = await this.federations.forIssuer(account.id, issuer);
    if (!trusting.length) throw new ExchangeRefused('issuer', undefined, { issuer });
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(subjectToken, await this.issuerKeys.keyGetter(issuer), {
        issuer,
        algorithms: SUBJECT_TOKEN_ALGS,
        requiredClaims: ['exp', 'iat', 'jti'],
        currentDate: now,
        clockTolerance: CLOCK_SKEW_SECONDS,
        maxTokenAge: SUBJECT_TOKEN_MAX_AGE_SECONDS,
      }));
    } catch (err) {
      throw new ExchangeRefused(verificationFailure(err), undefined, { issuer });
    }
    const { jti, sub } = claims;
    if (typeof jti !== 'string' || !jti || jti.length > 200) throw new ExchangeRefused('jti', undefined, { issuer, sub: clip(sub) });
    const audiences = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    let closest: { condition: string; federationId: string } | undefined;
    for (const federation of trusting) {
      if (!audiences.includes(federation.audience)) {
        closest ??= { condition: 'audience', federationId: federation.id };
        continue;
      }
      const failed = failedCondition(federation.conditions, claims);
      if (failed === null) return { claims: claims as Accepted['claims'], federation };
      // A federation whose audience matched is the one the caller most likely meant.
      if (!closest || closest.condition === 'audience') closest = { condition: `claim:${failed}`, federationId: federation.id };
    }
    throw new ExchangeRefused(closest!.condition, undefined, { issuer, sub: clip(sub), federationId: closest!.federationId });
  }
}

/** What a failed jose verification is called in the log. */
function verificationFailure(err: unknown): string {
  if (err instanceof IssuerUnavailable) return 'issuer_unavailable';
  if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys) return 'unknown_kid';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm';
  if (err instanceof joseErrors.JWTExpired) return err.claim === 'exp' ? 'expired' : 'too_old';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return err.reason === 'missing' ? `missing_claim:${err.claim}` : err.claim === 'nbf' || err.claim === 'iat' ? 'not_yet_valid' : `claim:${err.claim}`;
  return 'malformed';
}

/** RFC 8693 §2.1's parameters this grant takes, before anything is counted. @throws invalid_request */
function checkRequestShape(request: TokenExchangeTokenRequest): void {
  if (!(SUBJECT_TOKEN_TYPES as readonly string[]).includes(request.subject_token_type)) {
    throw oauthError(ERROR_CODES.invalidRequest, `subject_token_type must be ${SUBJECT_TOKEN_TYPES.join(' or ')}.`);
  }
  if (request.requested_token_type !== undefined && request.requested_token_type !== ACCESS_TOKEN_TOKEN_TYPE) {
    throw oauthError(ERROR_CODES.invalidRequest, `requested_token_type may only be ${ACCESS_TOKEN_TOKEN_TYPE}.`);
  }
  if (request.actor_token !== undefined || request.actor_token_type !== undefined) throw oauthError(ERROR_CODES.invalidRequest, 'Delegation (actor_token) is not supported.');
  if (request.client_secret !== undefined || request.client_assertion !== undefined) {
    throw oauthError(ERROR_CODES.invalidRequest, 'A token exchange takes no client secret or assertion: the subject_token is the credential.');
  }
  if (request.resource !== undefined || request.audience !== undefined) throw oauthError(ERROR_CODES.invalidRequest, 'resource and audience are not supported: the token is for this service.');
}
