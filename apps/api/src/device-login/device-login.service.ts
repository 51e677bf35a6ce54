import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  type AuthorizedResponse,
  CLI_CLIENT_ID,
  DEVICE_CODE_PREFIX,
  type DevicePollResponse,
  type DeviceStartRequest,
  type DeviceStartResponse,
  ERROR_CODES,
  formatUserCode,
  normalizeUserCode,
  ROUTES,
} from '@prospect/contract';
import type { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { ApiException, badRequest } from '../common/api-exception.js';
import { BackgroundWrites } from '../common/background-writes.js';
import { Clock } from '../common/clock.js';
import { generateSecret, generateUserCode, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { isUniqueViolation, Sql } from '../database/sql.js';
import { RefreshTokensService, sessionLabel } from '../tokens/refresh-tokens.service.js';
import { InvalidTokenError, TokensService } from '../tokens/tokens.service.js';
import { toPublicUser, type User } from '../users/user.entity.js';
import type { DeviceLoginStatus } from './device-login.entity.js';
import { open, seal } from '../common/sealed.js';

/** A poll this much early is network jitter, not a misbehaving client (RFC 8628 §3.5). */
export const POLL_JITTER_MS = 1_000;

/** Why a person cannot decide a device login; each gets its own page. */
export type UndecidableReason = 'unknown' | 'expired' | 'decided' | 'cancelled';

export class UndecidableDeviceLoginError extends Error {
  constructor(readonly reason: UndecidableReason) {
    super(`device login ${reason}`);
  }
}

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
  | { kind: 'authorized'; reply: AuthorizedResponse & { refreshToken: string }; scope: string | null };

/** What the approval page shows about a pending device login. */
export interface DeviceLoginForApproval {
  id: string;
  userCode: string;
  /** The registered name of the OAuth client that started it ("Prospect CLI"). */
  clientDisplayName: string;
  clientName: string | null;
  hostname: string | null;
  requestedIp: string | null;
  userAgent: string | null;
  createdAt: Date;
  expiresAt: Date;
}

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

interface PollRow {
  id: string;
  status: DeviceLoginStatus;
  expires_at: Date;
  redeemed_at: Date | null;
  reply_sealed: Buffer | null;
  client_name: string | null;
  hostname: string | null;
  client_id: string;
  scope: string | null;
  accepted: boolean;
}

@Injectable()
export class DeviceLoginService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sql: Sql,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly tokens: TokensService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
  ) {}

  get enabled(): boolean {
    return this.config.deviceLoginEnabled;
  }

  /** Sealed replies are erased once their window ends (on every replica; the UPDATE is idempotent). */
  @Interval((REPLY_WINDOW_SECONDS * 1000) / 2)
  scheduledErase(): void {
    this.background.run('erase sealed poll replies', () => this.eraseEndedReplies());
  }

  async eraseEndedReplies(): Promise<void> {
    await this.sql.rows(`UPDATE device_logins SET reply_sealed = NULL WHERE reply_sealed IS NOT NULL AND redeemed_at <= $1`, [
      new Date(this.clock.now().getTime() - REPLY_WINDOW_SECONDS * 1000),
    ]);
  }

  /**
   * @param userAgent the starting program's User-Agent, shown to the person who approves.
   * @param client the OAuth client starting it (already known to exist) and the scope it asks for.
   */
  async start(
    request: DeviceStartRequest,
    ip: string | null,
    userAgent: string | null = null,
    client: { id: string; scope?: string | null } = { id: CLI_CLIENT_ID },
  ): Promise<DeviceStartResponse> {
    const deviceCode = generateSecret(DEVICE_CODE_PREFIX);
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.config.deviceLoginTtlSeconds * 1000);
    // 20^8 codes make a clash with a live login rare; the unique index catches the rest.
    for (let attempt = 0; ; attempt++) {
      const userCode = generateUserCode();
      try {
        // The login and its audit event in one statement: both or neither, in one round trip.
        await this.sql.rows(
          `WITH login AS (
             INSERT INTO device_logins (device_code_hash, user_code, client_name, hostname, requested_ip, created_at, expires_at, user_agent, client_id, scope)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id
           )
           INSERT INTO auth_events (type, ip, detail, created_at)
           SELECT 'device.start', $5, jsonb_build_object('deviceLoginId', login.id, 'clientName', $3::text, 'clientId', $9::text), $6 FROM login`,
          [
            sha256(deviceCode),
            userCode,
            request.clientName ?? null,
            request.hostname ?? null,
            ip,
            now,
            expiresAt,
            userAgent?.slice(0, 200) ?? null,
            client.id,
            client.scope ?? null,
          ],
        );
        const shownCode = formatUserCode(userCode);
        return {
          deviceCode,
          userCode: shownCode,
          verificationUrl: `${this.config.publicUrl}${ROUTES.device}?user_code=${shownCode}`,
          intervalSeconds: this.config.devicePollIntervalSeconds,
          expiresInSeconds: this.config.deviceLoginTtlSeconds,
        };
      } catch (err) {
        if (attempt < 5 && isUniqueViolation(err)) continue;
        throw err;
      }
    }
  }

  /** One poll of the contract's route (seed §4.2): every end of the login reads `denied`. */
  async poll(deviceCode: string, ip: string | null): Promise<DevicePollResponse> {
    const outcome = await this.pollGrant(deviceCode, CLI_CLIENT_ID, ip);
    switch (outcome.kind) {
      case 'unknown':
        throw badRequest('Unknown device code.');
      case 'slow_down':
        throw this.slowDown();
      case 'pending':
        return { status: 'pending' };
      case 'authorized':
        return outcome.reply;
      default:
        return { status: 'denied' };
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
    const [login] = await this.sql.rows<PollRow>(
      `WITH target AS (
         SELECT id, last_polled_at FROM device_logins WHERE device_code_hash = $1 AND client_id = $4 FOR UPDATE
       )
       UPDATE device_logins d
          SET last_polled_at = CASE WHEN t.last_polled_at IS NULL OR t.last_polled_at <= $2 THEN $3 ELSE d.last_polled_at END
         FROM target t
        WHERE d.id = t.id
       RETURNING d.id, d.status, d.expires_at, d.redeemed_at, d.reply_sealed, d.client_name, d.hostname, d.client_id, d.scope,
                 (t.last_polled_at IS NULL OR t.last_polled_at <= $2) AS accepted`,
      [sha256(deviceCode), earliestPrevious, now, clientId],
    );
    if (!login) return { kind: 'unknown' };

    const expired = login.expires_at.getTime() <= now.getTime();
    switch (login.status) {
      case 'pending':
        if (expired) return { kind: 'expired' };
        if (!login.accepted) return { kind: 'slow_down' };
        return { kind: 'pending' };
      case 'approved':
        return expired ? { kind: 'expired' } : this.redeem(login, deviceCode, ip);
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
    const result = await this.db.transaction(async (tx) => {
      const [won] = (await tx.query(
        `UPDATE device_logins SET status = 'redeemed', redeemed_at = $2
          WHERE id = $1 AND status = 'approved' AND expires_at > $2
          RETURNING decided_by_user_id, (SELECT name FROM oauth_clients c WHERE c.id = client_id) AS client_display_name`,
        [login.id, now],
      )) as [Array<{ decided_by_user_id: string; client_display_name: string }>, number];
      if (!won[0]) return null;
      const [user] = (await tx.query(`SELECT id, email, name FROM users WHERE id = $1`, [won[0].decided_by_user_id])) as User[];
      const issued = await this.refreshTokens.issueFirstPair(tx, {
        userId: user!.id,
        // An OAuth client says nothing of itself: its registered name stands for it.
        label: sessionLabel(login.client_name ?? won[0].client_display_name, login.hostname),
        ip,
        deviceLoginId: login.id,
      });
      await this.audit.record('device.redeem', { userId: user!.id, ip, detail: { deviceLoginId: login.id, tokenId: issued.accessTokenId } }, tx);
      const reply: PollReply = { accessToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt.toISOString() };
      await tx.query(`UPDATE device_logins SET reply_sealed = $2 WHERE id = $1`, [login.id, seal(deviceCode, login.id, POLL_REPLY, reply)]);
      return { issued, user: user! };
    });
    if (!result) {
      // Another poll with this code redeemed it between our read and our update.
      const [now] = await this.sql.rows<PollRow>(
        `SELECT id, status, expires_at, redeemed_at, reply_sealed, client_name, hostname, client_id, scope, true AS accepted FROM device_logins WHERE id = $1`,
        [login.id],
      );
      // Not redeemed by another poll but expired, or cancelled, meanwhile: just over.
      if (now?.status === 'redeemed') return this.replyAgain(now, deviceCode, ip);
      return { kind: now?.status === 'cancelled' ? 'cancelled' : 'expired' };
    }
    const { issued, user } = result;
    return {
      kind: 'authorized',
      reply: { status: 'authorized', accessToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt.toISOString(), user: toPublicUser(user) },
      scope: login.scope,
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
        const principal = await this.tokens.verify(reply.accessToken);
        return { kind: 'authorized', reply: { status: 'authorized', ...reply, user: toPublicUser(principal.user) }, scope: login.scope };
      } catch (err) {
        // Revoked or expired meanwhile (a logout): nothing to hand out again.
        if (!(err instanceof InvalidTokenError)) throw err;
        return { kind: 'denied' };
      }
    }
    await this.onReplay(login.id, ip);
    return { kind: 'replayed' };
  }

  /** Revokes the family the login issued (access and refresh tokens) and forgets its sealed reply, with the audit events. */
  private async onReplay(deviceLoginId: string, ip: string | null): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(`UPDATE device_logins SET reply_sealed = NULL WHERE id = $1`, [deviceLoginId]);
      const revoked = await this.tokens.revokeFamily(deviceLoginId, 'device code replayed', ip, tx);
      await this.audit.record('device.replay', { ip, detail: { deviceLoginId, revokedTokens: revoked } }, tx);
    });
  }

  private slowDown(): ApiException {
    return new ApiException(429, ERROR_CODES.slowDown, `Polling too fast: wait ${this.config.devicePollIntervalSeconds} seconds between polls.`, {
      'Retry-After': String(this.config.devicePollIntervalSeconds),
    });
  }

  /** A pending, unexpired login by the code a person typed or followed; throws why not otherwise. */
  async findForApproval(userCodeInput: string): Promise<DeviceLoginForApproval> {
    const userCode = normalizeUserCode(userCodeInput);
    if (!userCode) throw new UndecidableDeviceLoginError('unknown');
    const rows = (await this.db.query(
      `SELECT d.id, d.user_code, d.status, d.client_name, d.hostname, d.requested_ip, d.user_agent, d.created_at, d.expires_at,
              c.name AS client_display_name
         FROM device_logins d JOIN oauth_clients c ON c.id = d.client_id
        WHERE d.user_code = $1 ORDER BY d.created_at DESC LIMIT 1`,
      [userCode],
    )) as Array<Record<string, never>>;
    const row = rows[0];
    if (!row) throw new UndecidableDeviceLoginError('unknown');
    if (row.status === 'cancelled') throw new UndecidableDeviceLoginError('cancelled');
    if (row.status !== 'pending') throw new UndecidableDeviceLoginError('decided');
    if ((row.expires_at as Date).getTime() <= this.clock.now().getTime()) throw new UndecidableDeviceLoginError('expired');
    return {
      id: row.id,
      userCode: formatUserCode(row.user_code),
      clientDisplayName: row.client_display_name,
      clientName: row.client_name,
      hostname: row.hostname,
      requestedIp: row.requested_ip,
      userAgent: row.user_agent,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    };
  }

  /**
   * The terminal stops waiting (Ctrl-C, a timeout): a login not yet redeemed can no longer be
   * approved, and its page says so. Idempotent, and the same answer for a code that is unknown.
   */
  async cancel(deviceCode: string, ip: string | null): Promise<void> {
    if (!looksLikeSecret(deviceCode, DEVICE_CODE_PREFIX)) return;
    await this.sql.rows(
      `WITH cancelled AS (
         UPDATE device_logins SET status = 'cancelled' WHERE device_code_hash = $1 AND status IN ('pending', 'approved') RETURNING id
       )
       INSERT INTO auth_events (type, ip, detail, created_at)
       SELECT 'device.cancel', $2, jsonb_build_object('deviceLoginId', cancelled.id), $3 FROM cancelled`,
      [sha256(deviceCode), ip, this.clock.now()],
    );
  }

  approve(userCode: string, userId: string, ip: string | null): Promise<void> {
    return this.decide(userCode, 'approved', userId, ip);
  }

  deny(userCode: string, userId: string, ip: string | null): Promise<void> {
    return this.decide(userCode, 'denied', userId, ip);
  }

  /**
   * Binds the decision to the signed-in person who made it. Only a pending,
   * unexpired login can be decided, and only once (one conditional UPDATE).
   */
  private async decide(userCodeInput: string, decision: 'approved' | 'denied', userId: string, ip: string | null): Promise<void> {
    const userCode = normalizeUserCode(userCodeInput);
    if (!userCode) throw new UndecidableDeviceLoginError('unknown');
    const now = this.clock.now();
    // The decision and its audit event in one statement.
    const rows = await this.sql.rows<{ id: string }>(
      `WITH decided AS (
         UPDATE device_logins SET status = $2, decided_by_user_id = $3, decided_at = $4
          WHERE user_code = $1 AND status = 'pending' AND expires_at > $4
          RETURNING id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT $5, $3, $6, jsonb_build_object('deviceLoginId', decided.id), $4 FROM decided
       RETURNING detail ->> 'deviceLoginId' AS id`,
      [userCode, decision, userId, now, decision === 'approved' ? 'device.approve' : 'device.deny', ip],
    );
    if (!rows[0]) {
      await this.findForApproval(userCode); // throws the precise reason
      throw new UndecidableDeviceLoginError('decided');
    }
  }
}
