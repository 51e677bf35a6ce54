import { createHash, randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import {
  AUTHORIZATION_CODE_PREFIX,
  ERROR_CODES,
  type ErrorCode,
  OAUTH_ROUTES,
  parseScopes,
  PKCE_S256_CHALLENGE_PATTERN,
  type Scope,
  SCOPES,
  type TokenResponse,
  withoutLoopbackPort,
} from '@prospect/contract';
import { Clock } from '../common/clock.js';
import { constantTimeEqual, generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { DeviceLoginService } from '../device-login/device-login.service.js';
import { RefreshTokensService, type TokenPair } from '../refresh-tokens/refresh-tokens.service.js';
import { TokensService } from '../tokens/tokens.service.js';
import { AuthorizationCodesRepository, type CodeRow } from './authorization-codes.repository.js';
import { type ConsentRow, ConsentsRepository } from './consents.repository.js';
import { IdTokens } from './id-tokens.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { oauthError } from './oauth-errors.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** RFC 6749 §4.1.2 asks for a short life: at most 60 s (RFC 9700's profile of it, and the issue). */
export const AUTHORIZATION_CODE_TTL_SECONDS = 60;

/** Used codes are kept this long after they expire, so a late replay still revokes what the code gave. */
const USED_CODES_KEPT_SECONDS = 24 * 3600;

/**
 * The longest authorization request a detour can carry back (a sign-in, a second factor, sudo
 * mode): the sign-in and sudo pages keep a `next` of at most this many characters (web/form.ts).
 */
export const MAX_AUTHORIZATION_PATH_LENGTH = 500;

export type Prompt = 'none' | 'login' | 'consent' | 'select_account';
const PROMPTS: readonly Prompt[] = ['none', 'login', 'consent', 'select_account'];

/** An authorization request that passed every check: what the consent page shows and the code is bound to. */
export interface AuthorizationRequest {
  client: OAuthClient;
  /** Exactly as the client sent it (a loopback one with its port). */
  redirectUri: string;
  state?: string;
  /** What it asked for (or, asking for nothing, all its client may have but `admin`), in the registry's order. */
  scopes: Scope[];
  nonce?: string;
  codeChallenge: string;
  prompts: Prompt[];
  /** OpenID Connect `max_age`, seconds. */
  maxAge?: number;
  loginHint?: string;
}

/** What the checks of a request found. */
export type CheckedAuthorization =
  /** The client or its redirect URI is not what it must be: shown as a page, never redirected to (RFC 6749 §4.1.2.1). */
  | { kind: 'refused'; status: number; title: string; message: string }
  /** Any other error: answered to the redirect URI. */
  | { kind: 'error'; location: string }
  | { kind: 'valid'; request: AuthorizationRequest };

/** The browser a request came in: who is signed in there and what they proved, for the rules of the door. */
export interface BrowserState {
  /** The signed-in person, and the key of this browser session (as `web_sessions.sid` holds it), which a code is bound to. */
  user?: { id: string; email: string; name: string; emailVerified: boolean; credentialEpoch: number; session: string };
  /** REQUIRE_SECOND_FACTOR: signed in without one, which must be set up first. */
  mustEnrolSecondFactor: boolean;
  /** REQUIRE_EMAIL_VERIFICATION and an address not proven: nothing persistent is granted. */
  emailBlocked: boolean;
  /** The session's last proof of who it is (sign-in or sudo re-confirmation), ms. */
  provenAt: number;
  /** Sudo mode lasts: an approval may be given. */
  inSudoMode: boolean;
}

/** What to do with a valid request in this browser. */
export type AuthorizationStep =
  | { kind: 'sign-in' }
  | { kind: 'enrol-second-factor' }
  | { kind: 'verify-email' }
  /** Prove who they are again (prompt=login, max_age, or sudo mode to approve), then come back. */
  | { kind: 'confirm' }
  | { kind: 'consent'; otherAccountHinted: boolean }
  | { kind: 'issue' }
  | { kind: 'error'; location: string };

/** What the session proved, as the code (and its ID token) records it. */
export interface Proof {
  authTime: Date;
  amr: string[];
}

/** Why a code exchange was refused: every one is `invalid_grant` on the wire. */
const EXCHANGE_REFUSALS = {
  unknown: 'This authorization code is not valid.',
  replayed: 'This authorization code was already used, so every token it gave has been revoked.',
  other_client: 'This authorization code was issued to another client.',
  expired: `This authorization code has expired (a code lasts ${AUTHORIZATION_CODE_TTL_SECONDS} seconds): sign in again.`,
  redirect_uri: 'redirect_uri is not the one this code was issued for.',
  pkce: 'code_verifier does not match the code_challenge of this code (PKCE).',
  account: 'The account this code was issued for has changed since (disabled, a new password or address, or signed out): sign in again.',
} as const;
type ExchangeRefusal = keyof typeof EXCHANGE_REFUSALS;

/** Why a request is answered with an error at its redirect URI. */
interface Refusal {
  error: ErrorCode;
  description: string;
}
const refusal = (error: ErrorCode, description: string): Refusal => ({ error, description });
const isRefusal = (value: unknown): value is Refusal => typeof value === 'object' && value !== null && 'error' in value;

/** A query or form parameter: absent, one string, or sent more than once (RFC 6749 §3.1 forbids that). */
function single(params: Record<string, unknown>, name: string): string | undefined | null {
  const value = params[name];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : null;
}

/** The PKCE S256 transform of a verifier (RFC 7636 §4.2). */
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/**
 * The authorization code flow with PKCE (issue #33), as node-oidc-provider builds an endpoint:
 * a pipeline of named checks run in the same order for the authorization request and the consent
 * page's answer (checkClient, checkRedirectUri, checkParameters, checkResponseType, checkPkce,
 * checkScope, checkPrompt), then the same rules as device approval for who may approve, then a
 * code bound to everything it was issued for, exchanged once into a token family that follows the
 * device grant's rules (refresh-tokens/).
 */
@Injectable()
export class AuthorizationService {
  private readonly logger = new Logger(AuthorizationService.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly clients: OAuthClientsService,
    private readonly clientRows: OAuthClientsRepository,
    private readonly codes: AuthorizationCodesRepository,
    private readonly consents: ConsentsRepository,
    private readonly tokens: TokensService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly deviceLogins: DeviceLoginService,
    private readonly idTokens: IdTokens,
  ) {}

  /** The issuer every response names (RFC 9207 `iss`, the ID token's `iss`, the metadata's `issuer`). */
  get issuer(): string {
    return this.config.publicUrl;
  }

  /** Runs every check of an authorization request (the query of GET /oauth/authorize, or the consent form's fields). */
  async check(params: Record<string, unknown>): Promise<CheckedAuthorization> {
    const client = await this.checkClient(params);
    if ('kind' in client) return client;
    const redirectUri = this.checkRedirectUri(params, client);
    if (typeof redirectUri !== 'string') return redirectUri;
    const state = single(params, 'state');
    const fail = (error: ErrorCode, description: string): CheckedAuthorization => ({
      kind: 'error',
      location: this.responseLocation(redirectUri, { error, error_description: description, ...(typeof state === 'string' ? { state } : {}) }),
    });
    const refused = this.checkParameters(params) ?? this.checkResponseType(params) ?? this.checkPkce(params);
    if (refused) return fail(refused.error, refused.description);
    const scopes = this.checkScope(params, client);
    if (isRefusal(scopes)) return fail(scopes.error, scopes.description);
    const prompts = this.checkPrompt(params);
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

  /** RFC 6749 §4.1.2.1: an unknown, disabled or code-flow-less client is told to the person, not redirected to. */
  private async checkClient(params: Record<string, unknown>): Promise<OAuthClient | Extract<CheckedAuthorization, { kind: 'refused' }>> {
    const clientId = single(params, 'client_id');
    const refuse = (message: string) => ({ kind: 'refused' as const, status: 400, title: 'This sign-in link is not valid', message });
    if (!clientId) return refuse('The application that sent you here did not say who it is (client_id). Go back to it and try again, or tell its developers.');
    const client = await this.clients.find(clientId);
    if (!client) return refuse(`No application “${clientId}” is registered on Prospect, so it cannot sign you in. Tell its developers, or a Prospect administrator.`);
    if (client.disabledAt) return refuse(`${client.name} is disabled on this server: it cannot sign anyone in. Ask a Prospect administrator.`);
    if (!client.redirectUris.length) return refuse(`${client.name} is not set up to sign in through the browser (it has no redirect URI). Ask a Prospect administrator.`);
    return client;
  }

  /**
   * The redirect URI must be one registered for the client, exactly; a loopback one (RFC 8252
   * §7.3) on any port. One that is not is never redirected to: it may be an attacker's.
   */
  private checkRedirectUri(params: Record<string, unknown>, client: OAuthClient): string | Extract<CheckedAuthorization, { kind: 'refused' }> {
    const given = single(params, 'redirect_uri');
    const refuse = (message: string) => ({ kind: 'refused' as const, status: 400, title: 'This sign-in link is not valid', message });
    if (!given) return refuse(`${client.name} did not say where to send you back (redirect_uri). Go back to it and try again, or tell its developers.`);
    const matches = client.redirectUris.some((registered) => registered === given || withoutLoopbackPort(registered) === withoutLoopbackPort(given));
    if (!matches) return refuse(`${client.name} asked to send you back to an address that is not registered for it, so Prospect will not send you there. Tell its developers.`);
    return given;
  }

  /** Each parameter once (RFC 6749 §3.1), request objects not supported, the lengths this server keeps. */
  private checkParameters(params: Record<string, unknown>): Refusal | undefined {
    const repeated = Object.keys(params).filter((name) => single(params, name) === null);
    if (repeated.length) return refusal(ERROR_CODES.invalidRequest, `Each parameter may be sent once: ${repeated.join(', ')} came more than once.`);
    if (single(params, 'request') !== undefined) return refusal(ERROR_CODES.requestNotSupported, 'Request objects (request) are not supported: send the parameters in the query.');
    if (single(params, 'request_uri') !== undefined) return refusal(ERROR_CODES.requestUriNotSupported, 'request_uri is not supported: send the parameters in the query.');
    const responseMode = single(params, 'response_mode');
    if (responseMode !== undefined && responseMode !== 'query') return refusal(ERROR_CODES.invalidRequest, 'Only response_mode=query is supported.');
    const maxAge = single(params, 'max_age');
    if (maxAge !== undefined && !/^\d{1,9}$/.test(maxAge!)) return refusal(ERROR_CODES.invalidRequest, 'max_age must be a whole number of seconds.');
    for (const [name, max] of [['state', 400], ['nonce', 200], ['login_hint', 320]] as const) {
      const value = single(params, name);
      if (value !== undefined && (value!.length > max || /[\u0000-\u001f\u007f]/.test(value!))) return refusal(ERROR_CODES.invalidRequest, `${name} must be at most ${max} printable characters.`);
    }
    return undefined;
  }

  /** OAuth 2.1: `code` only (no implicit or hybrid flow: `token` and `id_token` responses are refused). */
  private checkResponseType(params: Record<string, unknown>): Refusal | undefined {
    const responseType = single(params, 'response_type');
    if (!responseType) return refusal(ERROR_CODES.invalidRequest, 'Missing parameter: response_type (use code).');
    if (responseType !== 'code') return refusal(ERROR_CODES.unsupportedResponseType, `Unsupported response_type: ${responseType}. Only the authorization code flow (response_type=code) is supported.`);
    return undefined;
  }

  /** PKCE for every client, `S256` only: a missing challenge or `plain` is refused (RFC 9700 §2.1.1). */
  private checkPkce(params: Record<string, unknown>): Refusal | undefined {
    const challenge = single(params, 'code_challenge');
    const method = single(params, 'code_challenge_method');
    if (!challenge) return refusal(ERROR_CODES.invalidRequest, 'PKCE is required: send code_challenge, with code_challenge_method=S256.');
    if (method !== 'S256') return refusal(ERROR_CODES.invalidRequest, `code_challenge_method must be S256${method ? ` (not ${method})` : ' (a missing one means plain, which is not supported)'}.`);
    if (!PKCE_S256_CHALLENGE_PATTERN.test(challenge)) return refusal(ERROR_CODES.invalidRequest, 'code_challenge must be the base64url SHA-256 of the code verifier: 43 characters.');
    return undefined;
  }

  /**
   * What the client may be granted: the scopes asked for, each one defined (SCOPES) and allowed to
   * it, never `admin` (issue #31: administration is asked for in a device login and approved in sudo
   * mode); asking for nothing, all it is allowed but `admin`.
   */
  private checkScope(params: Record<string, unknown>, client: OAuthClient): Scope[] | Refusal {
    const requested = single(params, 'scope')?.trim();
    const allowed = client.allowedScopes.split(' ').filter(Boolean);
    const asked = requested ? requested.split(/ +/) : allowed.filter((scope) => scope !== 'admin');
    const unknown = asked.filter((scope) => !Object.hasOwn(SCOPES, scope));
    if (unknown.length) return refusal(ERROR_CODES.invalidScope, `Unknown scope: ${unknown.join(' ')} (scopes_supported lists them).`);
    if (asked.includes('admin')) return refusal(ERROR_CODES.invalidScope, 'admin is never granted through the browser: administration is asked for in a device login and approved in sudo mode.');
    const refused = asked.filter((scope) => !allowed.includes(scope));
    if (refused.length) return refusal(ERROR_CODES.invalidScope, `Not allowed to ${client.id}: ${refused.join(' ')}.`);
    const scopes = parseScopes(asked.join(' ')) ?? [];
    if (!scopes.length) return refusal(ERROR_CODES.invalidScope, 'No scope to grant.');
    return scopes;
  }

  /** OpenID Connect Core §3.1.2.1: `none` alone, or any of `login`, `consent`, `select_account`. */
  private checkPrompt(params: Record<string, unknown>): Prompt[] | Refusal {
    const values = (single(params, 'prompt') ?? '').split(' ').filter(Boolean);
    const unknown = values.filter((value) => !PROMPTS.includes(value as Prompt));
    if (unknown.length) return refusal(ERROR_CODES.invalidRequest, `Unsupported prompt: ${unknown.join(' ')}.`);
    if (values.includes('none') && values.length > 1) return refusal(ERROR_CODES.invalidRequest, 'prompt=none cannot be combined with other prompts.');
    return [...new Set(values)] as Prompt[];
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
    const user = browser.user;
    if (!user) return silent ? fail(ERROR_CODES.loginRequired, 'Nobody is signed in to Prospect in this browser.') : { kind: 'sign-in' };
    if (browser.mustEnrolSecondFactor) return silent ? fail(ERROR_CODES.interactionRequired, 'The person must set up a second factor first.') : { kind: 'enrol-second-factor' };
    if (browser.emailBlocked) return silent ? fail(ERROR_CODES.interactionRequired, 'The person must confirm their e-mail address first.') : { kind: 'verify-email' };
    const provedAgo = this.clock.now().getTime() - browser.provenAt;
    if (request.prompts.includes('login') || (request.maxAge !== undefined && provedAgo > request.maxAge * 1000)) {
      return silent ? fail(ERROR_CODES.loginRequired, 'The sign-in is older than max_age.') : { kind: 'confirm' };
    }
    const otherAccountHinted = request.loginHint !== undefined && request.loginHint.toLowerCase() !== user.email.toLowerCase();
    if (otherAccountHinted && silent) return fail(ERROR_CODES.loginRequired, 'Another account than the one hinted is signed in.');
    const remembered = await this.consents.scopeOf(user.id, request.client.id);
    const covered = remembered !== undefined && request.scopes.every((scope) => remembered.split(' ').includes(scope));
    if (covered && !otherAccountHinted && !request.prompts.includes('consent')) return { kind: 'issue' };
    if (silent) return fail(ERROR_CODES.consentRequired, `The person has not approved ${request.client.name} for ${request.scopes.join(' ')}.`);
    // As approving a device: sudo mode first, then the page (which checks it again for its button).
    if (!browser.inSudoMode) return { kind: 'confirm' };
    return { kind: 'consent', otherAccountHinted };
  }

  /** What the session proved and when, for the code: its last proof (sign-in or sudo) and with what (RFC 8176). */
  async proofOf(userId: string, provenAt: number): Promise<Proof> {
    const authTime = new Date(provenAt);
    const event = await this.codes.proofAt(userId, authTime);
    if (event?.type === 'web.sudo') return { authTime, amr: event.detail.with === 'code' ? ['otp'] : ['pwd'] };
    const secondFactor = event?.detail.secondFactor;
    const factor = secondFactor === 'passkey' ? ['hwk'] : secondFactor === 'totp' || secondFactor === 'recovery-code' ? ['otp'] : [];
    // Through another provider: how it proved the person is its own (no `pwd` here); `mfa` when it said a second factor was used.
    if (event?.type === 'federation.login') return { authTime, amr: factor.length || secondFactor === 'provider' ? [...factor, 'mfa'] : [] };
    // A passkey signs in alone (the sign-in page's passkey button) or after the password: the event does not say which.
    if (secondFactor === 'passkey') return { authTime, amr: ['hwk'] };
    return { authTime, amr: factor.length ? ['pwd', ...factor, 'mfa'] : ['pwd'] };
  }

  /**
   * A consent given on the page (in sudo mode): remembered, with its event, and a code issued, in
   * one transaction. Where the browser goes: the redirect URI with the code.
   */
  approve(request: AuthorizationRequest, user: NonNullable<BrowserState['user']>, proof: Proof, ip: string | null): Promise<string> {
    return this.uow.run(async (tx) => {
      await this.consents.remember(tx, user.id, request.client.id, request.scopes.join(' '), this.clock.now(), ip);
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
    type Outcome = { refused: ExchangeRefusal | 'client_disabled' } | { pair: TokenPair; code: CodeRow; account: { email: string; name: string; emailVerified: boolean } };
    const outcome = await this.uow.run(async (tx): Promise<Outcome> => {
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
      if (!account || account.disabled || account.credentialEpoch !== code.credential_epoch || !account.sessionLive) return { refused: 'account' };
      // The family first, then the code used with its event: the order the one statement of before wrote them in.
      const familyId = await this.deviceLogins.insertCodeGrantFamily(
        tx,
        { userId: code.user_id, clientId: code.client_id, scope: code.scope, ip },
        sha256(randomBytes(32).toString('base64url')), // the family row's device code hash: a random value nobody holds
        now,
      );
      await this.codes.redeem(tx, { id: code.id, clientId: code.client_id, userId: code.user_id, scope: code.scope }, familyId, now, ip);
      const pair = await this.refreshTokens.issueFirstPair(tx, { userId: code.user_id, label: current.name, ip, deviceLoginId: familyId, scope: code.scope, adminUntil: null });
      return { pair, code, account };
    });
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
      { clientId: client.id, scopes, nonce: code.nonce, authTime: code.auth_time, amr: code.amr },
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
      for (const family of await this.consents.codeGrantsOf(tx, userId, clientId)) await this.tokens.revokeFamily(family, 'connected app revoked', ip, tx);
      return true;
    });
  }
}
