import { GrantsService } from '../grants/grants.service.js';
import { stepBeforeApproving } from '../grants/approval-rules.js';
import { Injectable, Logger } from '@nestjs/common';
import { AUTHORIZATION_CODE_PREFIX, ERROR_CODES, type ErrorCode, OAUTH_ROUTES, parseScopes, type TokenResponse } from '@prospect/contract';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { TokensService } from '../tokens/tokens.service.js';
import { checkClient, checkParameters, checkPkce, checkPrompt, checkRedirectUri, checkResponseType, checkScope, isRefusal, single } from './authorization-checks.js';
import { AuthorizationCodeRedeemer, type CodeRefusal } from './authorization-code-redeemer.js';
import { AuthorizationCodesRepository } from './authorization-codes.repository.js';
import type { AuthorizationRequest, AuthorizationStep, BrowserState, CheckedAuthorization, Proof } from './authorization-request.js';
import { type ConsentRow, ConsentsRepository } from './consents.repository.js';
import { IdTokens } from './id-tokens.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { oauthError } from './oauth-errors.js';
import { UnitOfWork } from '../database/unit-of-work.js';

export type { AuthorizationRequest, AuthorizationStep, BrowserState, CheckedAuthorization, Prompt, Proof } from './authorization-request.js';

/** RFC 6749 §4.1.2 asks for a short life: at most 60 s (RFC 9700's profile of it, and the issue). */
export const AUTHORIZATION_CODE_TTL_SECONDS = 60;

/** Used codes are kept this long after they expire, so a late replay still revokes what the code gave. */
const USED_CODES_KEPT_SECONDS = 24 * 3600;

/**
 * The longest authorization request a detour can carry back (a sign-in, a second factor, sudo
 * mode): the sign-in and sudo pages keep a `next` of at most this many characters (web/form.ts).
 */
export const MAX_AUTHORIZATION_PATH_LENGTH = 500;

/** Why a code exchange was refused: every one is `invalid_grant` on the wire. */
const EXCHANGE_REFUSALS = {
  unknown: 'This authorization code is not valid.',
  replayed: 'This authorization code was already used, so every token it gave has been revoked.',
  other_client: 'This authorization code was issued to another client.',
  expired: `This authorization code has expired (a code lasts ${AUTHORIZATION_CODE_TTL_SECONDS} seconds): sign in again.`,
  redirect_uri: 'redirect_uri is not the one this code was issued for.',
  pkce: 'code_verifier does not match the code_challenge of this code (PKCE).',
  account: 'The account this code was issued for has changed since (disabled, a new password or address, or signed out): sign in again.',
} as const satisfies Record<CodeRefusal, string>;

/**
 * The authorization code flow with PKCE (issue #33), as node-oidc-provider builds an endpoint:
 * a pipeline of named checks run in the same order for the authorization request and the consent
 * page's answer (checkClient, checkRedirectUri, checkParameters, checkResponseType, checkPkce,
 * checkScope, checkPrompt: authorization-checks.ts), then the same rules as device approval for who
 * may approve, then a code bound to everything it was issued for, exchanged once into a token family
 * that follows the device grant's rules (refresh-tokens/; the exchange's transaction is
 * AuthorizationCodeRedeemer's).
 */
@Injectable()
export class AuthorizationService {
  private readonly logger = new Logger(AuthorizationService.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly clients: OAuthClientsService,
    private readonly codes: AuthorizationCodesRepository,
    private readonly consents: ConsentsRepository,
    private readonly tokens: TokensService,
    private readonly redeemer: AuthorizationCodeRedeemer,
    private readonly idTokens: IdTokens,
    private readonly grants: GrantsService,
  ) {}

  /** The issuer every response names (RFC 9207 `iss`, the ID token's `iss`, the metadata's `issuer`). */
  get issuer(): string {
    return this.config.publicUrl;
  }

  /** Runs every check of an authorization request (the query of GET /oauth/authorize, or the consent form's fields). */
  async check(params: Record<string, unknown>): Promise<CheckedAuthorization> {
    const client = await checkClient(params, this.clients);
    if ('kind' in client) return client;
    const redirectUri = checkRedirectUri(params, client);
    if (typeof redirectUri !== 'string') return redirectUri;
    const state = single(params, 'state');
    const fail = (error: ErrorCode, description: string): CheckedAuthorization => ({
      kind: 'error',
      location: this.responseLocation(redirectUri, { error, error_description: description, ...(typeof state === 'string' ? { state } : {}) }),
    });
    const refused = checkParameters(params) ?? checkResponseType(params) ?? checkPkce(params);
    if (refused) return fail(refused.error, refused.description);
    const scopes = checkScope(params, client);
    if (isRefusal(scopes)) return fail(scopes.error, scopes.description);
    const prompts = checkPrompt(params);
    if (isRefusal(prompts)) return fail(prompts.error, prompts.description);
    const maxAge = single(params, 'max_age');
    const request: AuthorizationRequest = {
      client,
      redirectUri,
      scopes,
      codeChallenge: single(params, 'code_challenge')!,
      prompts,
      ...(state ? { state } : {}),
      ...(single(params, 'nonce') ? { nonce: single(params, 'nonce')! } : {}),
      ...(maxAge ? { maxAge: Number(maxAge) } : {}),
      ...(single(params, 'login_hint') ? { loginHint: single(params, 'login_hint')! } : {}),
    };
    if (this.canonicalPath(request).length > MAX_AUTHORIZATION_PATH_LENGTH) {
      return fail(ERROR_CODES.invalidRequest, `The request is too long for this server (at most ${MAX_AUTHORIZATION_PATH_LENGTH} characters of path and query): send a shorter state or nonce.`);
    }
    return { kind: 'valid', request };
  }

  /**
   * The request as a path on this site, with only what it means (unknown parameters dropped): what
   * a sign-in or sudo detour returns to. `afterProof` drops what a fresh proof of identity answers
   * (prompt=login, max_age), so the way back does not ask again.
   */
  canonicalPath(request: AuthorizationRequest, options: { afterProof?: boolean } = {}): string {
    const prompts = options.afterProof ? request.prompts.filter((prompt) => prompt !== 'login') : request.prompts;
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: request.client.id,
      redirect_uri: request.redirectUri,
      scope: request.scopes.join(' '),
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      ...(request.state !== undefined ? { state: request.state } : {}),
      ...(request.nonce !== undefined ? { nonce: request.nonce } : {}),
      ...(prompts.length ? { prompt: prompts.join(' ') } : {}),
      ...(request.maxAge !== undefined && !options.afterProof ? { max_age: String(request.maxAge) } : {}),
      ...(request.loginHint !== undefined ? { login_hint: request.loginHint } : {}),
    });
    return `${OAUTH_ROUTES.authorize}?${query.toString()}`;
  }

  /**
   * What happens next in this browser, by the rules device approval follows: a signed-out person
   * signs in first (with their second factor), REQUIRE_SECOND_FACTOR and REQUIRE_EMAIL_VERIFICATION
   * hold, a consent is given in sudo mode, one given before is remembered; `prompt` and `max_age`
   * as OpenID Connect words them, `prompt=none` answering without showing anything.
   */
  async nextStep(request: AuthorizationRequest, browser: BrowserState): Promise<AuthorizationStep> {
    const silent = request.prompts.includes('none');
    const fail = (error: ErrorCode, description: string): AuthorizationStep => ({ kind: 'error', location: this.errorLocation(request, error, description) });
    // The rule of every approval (grants/approval-rules.ts); its sudo step waits until a consent must be given.
    const step = stepBeforeApproving({
      signedIn: browser.user !== undefined,
      mustEnrolSecondFactor: browser.mustEnrolSecondFactor,
      addressUnproven: browser.emailBlocked,
      inSudoMode: browser.inSudoMode,
    });
    const user = browser.user;
    if (step === 'sign-in' || !user) return silent ? fail(ERROR_CODES.loginRequired, 'Nobody is signed in to Prospect in this browser.') : { kind: 'sign-in' };
    if (step === 'enrol-second-factor') return silent ? fail(ERROR_CODES.interactionRequired, 'The person must set up a second factor first.') : { kind: 'enrol-second-factor' };
    if (step === 'verify-email') return silent ? fail(ERROR_CODES.interactionRequired, 'The person must confirm their e-mail address first.') : { kind: 'verify-email' };
    const provedAgo = this.clock.now().getTime() - browser.provenAt;
    if (request.prompts.includes('login') || (request.maxAge !== undefined && provedAgo > request.maxAge * 1000)) {
      return silent ? fail(ERROR_CODES.loginRequired, 'The sign-in is older than max_age.') : { kind: 'confirm' };
    }
    const otherAccountHinted = request.loginHint !== undefined && request.loginHint.toLowerCase() !== user.email.toLowerCase();
    if (otherAccountHinted && silent) return fail(ERROR_CODES.loginRequired, 'Another account than the one hinted is signed in.');
    // The CLI's own built-in client is a first-party app: signing it in asks no consent, as signing in
    // to the site asks none. The rule of every approval still holds, sudo mode included, as for a
    // device login approved on the device page: a code for it is a CLI session as much as a device code.
    if (request.client.builtIn && !otherAccountHinted && !request.prompts.includes('consent')) {
      if (step !== 'confirm') return { kind: 'issue' };
      return silent ? fail(ERROR_CODES.interactionRequired, 'The person must confirm who they are first.') : { kind: 'confirm' };
    }
    const remembered = await this.consents.scopeOf(user.id, request.client.id, user.credentialEpoch);
    const covered = remembered !== undefined && request.scopes.every((scope) => remembered.split(' ').includes(scope));
    if (covered && !otherAccountHinted && !request.prompts.includes('consent')) return { kind: 'issue' };
    if (silent) return fail(ERROR_CODES.consentRequired, `The person has not approved ${request.client.name} for ${request.scopes.join(' ')}.`);
    // As approving a device: sudo mode first, then the page (which checks it again for its button).
    if (step === 'confirm') return { kind: 'confirm' };
    return { kind: 'consent', otherAccountHinted };
  }

  /**
   * A consent given on the page (in sudo mode): remembered, with its event, and a code issued, in
   * one transaction. Where the browser goes: the redirect URI with the code.
   */
  approve(request: AuthorizationRequest, user: NonNullable<BrowserState['user']>, proof: Proof, ip: string | null): Promise<string> {
    return this.uow.run(async (tx) => {
      await this.consents.remember(tx, user.id, request.client.id, request.scopes.join(' '), user.credentialEpoch, this.clock.now(), ip);
      return this.issue(request, user, proof, tx);
    });
  }

  /** The person said no: the redirect URI with `access_denied`. */
  deny(request: AuthorizationRequest): string {
    return this.errorLocation(request, ERROR_CODES.accessDenied, 'The person denied the request.');
  }

  /**
   * A code for a consent given now or before: 256 random bits, of which only the SHA-256 is kept,
   * bound to the client, the redirect URI, the PKCE challenge, the nonce, the person, their
   * account state and the browser session that approved it, usable once within
   * AUTHORIZATION_CODE_TTL_SECONDS. The redirect URI with it.
   */
  async issue(request: AuthorizationRequest, user: NonNullable<BrowserState['user']>, proof: Proof, tx?: Parameters<AuthorizationCodesRepository['insert']>[2]): Promise<string> {
    const code = generateSecret(AUTHORIZATION_CODE_PREFIX);
    const now = this.clock.now();
    await this.codes.insert(
      {
        codeHash: sha256(code),
        clientId: request.client.id,
        userId: user.id,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        scope: request.scopes.join(' '),
        nonce: request.nonce ?? null,
        authTime: proof.authTime,
        amr: proof.amr,
        secondFactor: proof.secondFactor,
        credentialEpoch: user.credentialEpoch,
        webSession: user.session,
        createdAt: now,
        expiresAt: new Date(now.getTime() + AUTHORIZATION_CODE_TTL_SECONDS * 1000),
      },
      new Date(now.getTime() - (AUTHORIZATION_CODE_TTL_SECONDS + USED_CODES_KEPT_SECONDS) * 1000),
      tx,
    );
    return this.responseLocation(request.redirectUri, { code, ...(request.state !== undefined ? { state: request.state } : {}) });
  }

  /** An error answered to the client (RFC 6749 §4.1.2.1), with its state and our issuer. */
  errorLocation(request: AuthorizationRequest, error: ErrorCode, description: string): string {
    return this.responseLocation(request.redirectUri, { error, error_description: description, ...(request.state !== undefined ? { state: request.state } : {}) });
  }

  /** The redirect URI with the response's parameters and `iss` (RFC 9207) added to its query. */
  private responseLocation(redirectUri: string, params: Record<string, string>): string {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries({ ...params, iss: this.issuer })) url.searchParams.set(name, value);
    return url.href;
  }

  /**
   * RFC 6749 §4.1.3 with RFC 7636 §4.6: the code (once, in time, of this client, for this redirect
   * URI and PKCE verifier, for an account unchanged since) for a new token family of the device
   * grant's kind, and an ID token when `openid` was granted. A code presented again revokes every
   * token it gave (RFC 6749 §4.1.2).
   * @param client the client, authenticated (ClientAuthentication).
   * @throws invalid_grant naming why; invalid_client when the client was disabled meanwhile.
   */
  async exchange(client: OAuthClient, input: { code: string; redirectUri: string; codeVerifier: string }, ip: string | null): Promise<TokenResponse> {
    if (!looksLikeSecret(input.code, AUTHORIZATION_CODE_PREFIX)) throw oauthError(ERROR_CODES.invalidGrant, EXCHANGE_REFUSALS.unknown);
    const outcome = await this.redeemer.redeem(client, input, ip);
    if ('refused' in outcome) {
      if (outcome.refused === 'client_disabled') throw oauthError(ERROR_CODES.invalidClient, `The client ${client.id} is disabled on this server: ask its administrator.`);
      if (outcome.refused === 'replayed') this.logger.warn(`authorization code of ${client.id} used twice: revoked what it gave`);
      throw oauthError(ERROR_CODES.invalidGrant, EXCHANGE_REFUSALS[outcome.refused]);
    }
    const { pair, code, account } = outcome;
    const scopes = parseScopes(code.scope) ?? [];
    const expiresIn = Math.max(0, Math.round((pair.expiresAt.getTime() - this.clock.now().getTime()) / 1000));
    const response: TokenResponse = { access_token: pair.accessToken, token_type: 'Bearer', expires_in: expiresIn, refresh_token: pair.refreshToken, scope: pair.scope };
    if (!scopes.includes('openid')) return response;
    const idToken = await this.idTokens.sign(
      { userId: code.user_id, ...account },
      // Its grant was made by this exchange, now.
      { clientId: client.id, scopes, nonce: code.nonce, authTime: code.auth_time, amr: code.amr, approvedAt: this.clock.now() },
    );
    return { ...response, id_token: idToken };
  }

  /** A person's connected apps: the clients they approved, with what and the grants they hold now. */
  connectedApps(userId: string): Promise<ConsentRow[]> {
    return this.consents.listForUser(userId, this.clock.now());
  }

  /**
   * Revokes a connected app: the consent forgotten (the next sign-in asks again), its codes not
   * exchanged yet used up, and every token family of its grants revoked (with every token made with
   * them), in one transaction. False when there was no such consent.
   */
  revokeConsent(userId: string, clientId: string, ip: string | null): Promise<boolean> {
    return this.uow.run(async (tx) => {
      const now = this.clock.now();
      if (!(await this.consents.forget(tx, userId, clientId, now, ip))) return false;
      // Codes first: an exchange under way holds its code, and its grant is then committed before the families are read.
      await this.codes.burnUnused(tx, clientId, userId, now);
      for (const family of await this.grants.codeGrantsOf(tx, userId, clientId)) await this.tokens.revokeFamily(family, 'connected app revoked', ip, tx);
      return true;
    });
  }
}
