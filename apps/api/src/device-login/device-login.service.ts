import { Injectable } from '@nestjs/common';
import {
  type AuthorizedResponse,
  CLI_CLIENT_ID,
  CLI_DEFAULT_SCOPES,
  DEVICE_CODE_PREFIX,
  type DeviceStartRequest,
  type DeviceStartResponse,
  formatUserCode,
  parseScopes,
  ROUTES,
} from '@prospect/contract';
import { AccessTokenVerifier, InvalidTokenError } from '../auth/access-token-verifier.js';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { generateSecret, generateUserCode, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../metrics/metrics.js';
import { DatabaseDeadline } from '../database/database-deadline.js';
import { isUniqueViolation } from '../database/sql.js';
import { refusalToIssue } from '../grants/grant-rules.js';
import { GrantsService } from '../grants/grants.service.js';
import { RefreshTokensService, sessionLabel } from '../refresh-tokens/refresh-tokens.service.js';
import { FamilyMembers } from '../tokens/family-members.js';
import { TokensService } from '../tokens/tokens.service.js';
import { toPublicUser } from '../users/user.entity.js';
import { DeviceLoginsRepository, type PollRow } from './device-logins.repository.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { Tx } from '../database/tx.js';

/** A poll this much early is network jitter, not a misbehaving client (RFC 8628 §3.5). */
export const POLL_JITTER_MS = 1_000;

/**
 * What a poll of a device code found, before either surface words it: the contract's poll
 * route folds the ends into `denied`, the OAuth token endpoint names each (RFC 8628 §3.5).
 */
export type PollOutcome =
  | { kind: 'pending' }
  | { kind: 'slow_down' }
  | { kind: 'denied' }
  | { kind: 'expired' }
  | { kind: 'cancelled' }
  /** Redeemed before and polled again after the reply window: what it issued is revoked. */
  | { kind: 'replayed' }
  /** No such code, or a code of another client. */
  | { kind: 'unknown' }
  | { kind: 'authorized'; reply: AuthorizedResponse & { refreshToken: string }; scope: string };

/**
 * For this long after a device code is redeemed, polling it again answers the same
 * token, so a CLI whose answer was lost (a dropped connection, a crash of the server
 * after the commit) still ends logged in. After it, a poll is a replay.
 */
export const REPLY_WINDOW_SECONDS = 60;

/** What an authorized poll answered, kept sealed (common/sealed.ts) under the device code for a retried poll. */
interface PollReply {
  accessToken: string;
  refreshToken: string;
  expiresAt: string;
}
const POLL_REPLY = 'poll-reply';

@Injectable()
export class DeviceLoginService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly deviceLogins: DeviceLoginsRepository,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly tokens: TokensService,
    private readonly verifier: AccessTokenVerifier,
    private readonly refreshTokens: RefreshTokensService,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    private readonly grants: GrantsService,
    families: FamilyMembers,
  ) {
    // "Sign out everywhere" (TokensService, below this module) cancels the uncollected approvals through us.
    families.attachUncollectedApprovals({ cancelApprovedBy: (tx, userId) => this.deviceLogins.cancelUncollectedApprovedBy(tx, userId) });
  }

  get enabled(): boolean {
    return this.config.deviceLoginEnabled;
  }

  /**
   * Where people approve: PUBLIC_URL when it is set; else (its default is only a guess,
   * http://localhost:PORT) the address the client itself used, so that a CLI given
   * 127.0.0.1 is not sent to localhost, where the browser's cookies differ.
   */
  publicBase(requestOrigin?: string): string {
    return this.config.publicUrlSet || !requestOrigin ? this.config.publicUrl : requestOrigin;
  }

  /**
   * @param userAgent the starting program's User-Agent, shown to the person who approves.
   * @param client the OAuth client starting it (already known to exist) and the scope it is granted
   *   if the person approves. Unset (the contract's routes): the CLI, with the scopes the request
   *   names (`auth:login --scopes`, each one the CLI may have) or else CLI_DEFAULT_SCOPES, without `admin`.
   * @param requestOrigin the address the client reached us at (RequestOrigin), for the verification URL.
   * @param deadline the request's whole budget for the database, of which the start limit's wait
   *   spent some already (DatabaseDeadline); unset, DATABASE_TIMEOUT_MS from now. Past it,
   *   DatabaseDeadlineExceeded (a 503), even if the insert is still under way.
   */
  async start(
    request: DeviceStartRequest,
    ip: string | null,
    userAgent: string | null = null,
    client: { id: string; scope: string } = { id: CLI_CLIENT_ID, scope: parseScopes((request.scopes ?? CLI_DEFAULT_SCOPES).join(' '))!.join(' ') },
    requestOrigin?: string,
    deadline = DatabaseDeadline.after(this.config.databaseTimeoutMs),
  ): Promise<DeviceStartResponse> {
    const deviceCode = generateSecret(DEVICE_CODE_PREFIX);
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.config.deviceLoginTtlSeconds * 1000);
    // 20^8 codes make a clash with a live login rare; the unique index catches the rest.
    for (let attempt = 0; ; attempt++) {
      const userCode = generateUserCode();
      try {
        // The login and its audit event in one statement: both or neither, in one round trip.
        const started = {
          deviceCodeHash: sha256(deviceCode),
          userCode,
          clientName: request.clientName ?? null,
          hostname: request.hostname ?? null,
          requestedIp: ip,
          createdAt: now,
          expiresAt,
          userAgent: userAgent?.slice(0, 200) ?? null,
          clientId: client.id,
          scope: client.scope,
        };
        await deadline.within(() => this.deviceLogins.insertStarted(started));
        this.metrics.deviceLogin('started');
        const shownCode = formatUserCode(userCode);
        return {
          deviceCode,
          userCode: shownCode,
          verificationUrl: `${this.publicBase(requestOrigin)}${ROUTES.device}?user_code=${shownCode}`,
          intervalSeconds: this.config.devicePollIntervalSeconds,
          expiresInSeconds: this.config.deviceLoginTtlSeconds,
        };
      } catch (err) {
        if (attempt < 5 && isUniqueViolation(err)) continue;
        throw err;
      }
    }
  }

  /**
   * One poll by `clientId`. A single UPDATE both reads the state and claims the poll slot, so
   * the interval holds across API instances; only pending logins are throttled.
   */
  async pollGrant(deviceCode: string, clientId: string, ip: string | null): Promise<PollOutcome> {
    if (!looksLikeSecret(deviceCode, DEVICE_CODE_PREFIX)) return { kind: 'unknown' };
    const now = this.clock.now();
    const earliestPrevious = new Date(now.getTime() - this.config.devicePollIntervalSeconds * 1000 + POLL_JITTER_MS);
    const login = await this.deviceLogins.claimPoll(sha256(deviceCode), clientId, earliestPrevious, now);
    if (!login) return { kind: 'unknown' };

    const expired = login.expires_at.getTime() <= now.getTime();
    if (expired && (login.status === 'pending' || login.status === 'approved')) {
      this.metrics.deviceLogin('expired');
      return { kind: 'expired' };
    }
    switch (login.status) {
      case 'pending':
        return login.accepted ? { kind: 'pending' } : { kind: 'slow_down' };
      case 'approved':
        return this.redeem(login, deviceCode, ip);
      case 'redeemed':
        return this.replyAgain(login, deviceCode, ip);
      case 'denied':
        return { kind: 'denied' };
      case 'cancelled':
        return { kind: 'cancelled' };
    }
  }

  /** The first poll after approval takes the token pair; the conditional UPDATE lets only one win. */
  private async redeem(login: PollRow, deviceCode: string, ip: string | null): Promise<PollOutcome> {
    const now = this.clock.now();
    const result = await this.uow.run(async (tx) => {
      const won = await this.deviceLogins.lockForRedemption(tx, login.id, now);
      // The grant's lock after the login's, the order a client's disable and a replay take them in
      // too ("sign out everywhere" takes the person's uncollected logins before any grant), and its rules at its first tokens: an account disabled or changed since the approval, a client
      // disabled meanwhile, a grant revoked, and the login is as good as cancelled.
      const grant = won && (await this.grants.lockForIssue(tx, won.grantId));
      if (!won || !grant) return null;
      if (refusalToIssue(grant, this.config)) {
        await this.deviceLogins.setRedeemedOrCancelled(tx, login.id, 'cancelled', now);
        return null;
      }
      await this.deviceLogins.setRedeemedOrCancelled(tx, login.id, 'redeemed', now);
      const { user } = won;
      const issued = await this.refreshTokens.issueFirstPair(tx, {
        userId: user.id,
        // An OAuth client says nothing of itself: its registered name stands for it.
        label: sessionLabel(login.client_name ?? won.clientDisplayName, login.hostname),
        ip,
        grantId: won.grantId,
        scope: won.scope,
        adminUntil: won.adminUntil,
      });
      await this.audit.record('device.redeem', { userId: user.id, ip, detail: { deviceLoginId: login.id, tokenId: issued.accessTokenId } }, tx);
      const reply: PollReply = { accessToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt.toISOString() };
      await this.deviceLogins.setSealedReply(tx, login.id, seal(deviceCode, login.id, POLL_REPLY, reply));
      return { issued, user };
    });
    if (!result) {
      // Another poll with this code redeemed it between our read and our lock, or it is over:
      // expired, or cancelled meanwhile (by the CLI, or here: its grant may issue nothing).
      const now = await this.deviceLogins.findForPoll(login.id);
      if (now?.status === 'redeemed') return this.replyAgain(now, deviceCode, ip);
      return { kind: now?.status === 'cancelled' ? 'cancelled' : 'expired' };
    }
    const { issued, user } = result;
    this.metrics.deviceLogin('redeemed');
    return {
      kind: 'authorized',
      reply: { status: 'authorized', accessToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt.toISOString(), user },
      scope: issued.scope,
    };
  }

  /**
   * A redeemed device code polled again: within the window, the same answer (the CLI
   * lost it); after it, someone else holds the code, so what it issued is revoked and
   * a copied code cannot keep a silent second session.
   */
  private async replyAgain(login: PollRow, deviceCode: string, ip: string | null): Promise<PollOutcome> {
    const windowEnds = (login.redeemed_at?.getTime() ?? 0) + REPLY_WINDOW_SECONDS * 1000;
    const reply = login.reply_sealed && this.clock.now().getTime() < windowEnds ? open<PollReply>(deviceCode, login.id, POLL_REPLY, login.reply_sealed) : null;
    if (reply) {
      try {
        const principal = await this.verifier.verify(reply.accessToken);
        return { kind: 'authorized', reply: { status: 'authorized', ...reply, user: toPublicUser(principal.user) }, scope: principal.scopes.join(' ') };
      } catch (err) {
        // Revoked or expired meanwhile (a logout): nothing to hand out again.
        if (!(err instanceof InvalidTokenError)) throw err;
        return { kind: 'denied' };
      }
    }
    await this.onReplay(login.id, login.grant_id, ip);
    return { kind: 'replayed' };
  }

  /** Revokes the family the login issued (access and refresh tokens) and forgets its sealed reply, with the audit events. */
  private async onReplay(deviceLoginId: string, grantId: string | null, ip: string | null): Promise<void> {
    await this.uow.run(async (tx) => {
      await this.deviceLogins.setSealedReply(tx, deviceLoginId, null);
      const revoked = grantId ? await this.tokens.revokeFamily(grantId, 'device code replayed', ip, tx) : 0;
      await this.audit.record('device.replay', { ip, detail: { deviceLoginId, revokedTokens: revoked } }, tx);
    });
  }


  /** Cancels, in `tx`, every login of a client not redeemed yet (its admin disables it); how many. */
  cancelUnredeemedOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.deviceLogins.cancelUnredeemedOfClient(tx, clientId);
  }

  /** Deletes, in `tx`, every login of a client that is being deleted (DeviceLoginsRepository.deleteAllOfClient); how many. */
  deleteAllOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.deviceLogins.deleteAllOfClient(tx, clientId);
  }

  /** At most `limit` logins expired before `now` whose grant no kept token descends from, in `tx` (retention); how many. */
  purgeExpiredWithoutTokens(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.deviceLogins.deleteExpiredWithoutTokens(tx, now, limit);
  }

  /** Forgets the poll replies of logins redeemed before `redeemedBefore` (their window is over; idempotent). */
  eraseSealedRepliesRedeemedBefore(redeemedBefore: Date): Promise<void> {
    return this.deviceLogins.eraseSealedRepliesRedeemedBefore(redeemedBefore);
  }

  /**
   * The terminal stops waiting (Ctrl-C, a timeout): a login not yet redeemed can no longer be
   * approved, and its page says so. Idempotent, and the same answer for a code that is unknown.
   */
  async cancel(deviceCode: string, ip: string | null): Promise<void> {
    if (!looksLikeSecret(deviceCode, DEVICE_CODE_PREFIX)) return;
    await this.deviceLogins.cancelWithAudit(sha256(deviceCode), ip, this.clock.now());
  }
}
