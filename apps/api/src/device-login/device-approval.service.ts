import { Injectable } from '@nestjs/common';
import { formatUserCode, normalizeUserCode, parseScopes, type Scope, SCOPES } from '@prospect/contract';
import { AuditService, clipUserAgent } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../metrics/metrics.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import type { GrantProof } from '../grants/grant-rules.js';
import { GrantsService } from '../grants/grants.service.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { DeviceLoginsRepository } from './device-logins.repository.js';

/** Why a person cannot decide a device login; each gets its own page. */
export type UndecidableReason = 'unknown' | 'expired' | 'decided' | 'cancelled';

/** The OAuth client a device login was started by, as the pages name it. */
export interface DeviceLoginClient {
  id: string;
  /** Its registered name ("Prospect CLI", "Acme Sync"). */
  displayName: string;
}

export class UndecidableDeviceLoginError extends Error {
  constructor(
    readonly reason: UndecidableReason,
    /** Who started it, when the code matched a login (expired, used, cancelled). */
    readonly client?: DeviceLoginClient,
  ) {
    super(`device login ${reason}`);
  }
}

/** A decision the page reports: the client it was about. */
export interface DeviceDecision extends DeviceLoginClient {
  /**
   * The same person had made this same decision on this code before: the form was sent again (a
   * reload, a second click, a retry after an answer lost on the way), and nothing changed now.
   */
  madeBefore: boolean;
}

/** The signed-in person who typed (or followed) a user code, and the address they did it from: whose guesses are counted. */
export interface CodeHolder {
  userId: string;
  ip: string | null;
  /** Their browser's User-Agent, for the decision's event (issue #46). */
  userAgent?: string | null;
}

/** A code holder who decides, with how their session proved them, which an approval's grant keeps. */
export type Approver = CodeHolder & GrantProof;

/** What the approval page shows about a pending device login. */
export interface DeviceLoginForApproval {
  id: string;
  userCode: string;
  clientId: string;
  /** The registered name of the OAuth client that started it ("Prospect CLI"). */
  clientDisplayName: string;
  clientName: string | null;
  hostname: string | null;
  requestedIp: string | null;
  userAgent: string | null;
  createdAt: Date;
  expiresAt: Date;
  /** What approving grants, in words for the person (SCOPES). */
  scopes: Array<{ name: Scope; words: string }>;
  /** It asks for `admin`: approved only in sudo mode, and for ADMIN_GRANT_SECONDS. */
  asksForAdmin: boolean;
}

/** The browser's side of a device login: the person who finds it by its user code and decides it. */
@Injectable()
export class DeviceApprovalService {
  constructor(
    private readonly deviceLogins: DeviceLoginsRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
    private readonly limits: RateLimits,
    private readonly audit: AuditService,
    private readonly uow: UnitOfWork,
    private readonly grants: GrantsService,
  ) {}

  /**
   * A person opens the code they typed or followed: the approval page's lookup, under the
   * wrong-code limit (USER_CODE_TRIES_PER_MINUTE per person and per address; TooManyRequests).
   */
  findFor(person: CodeHolder, userCodeInput: string): Promise<DeviceLoginForApproval> {
    return this.counted(person, () => this.lookUp(userCodeInput));
  }

  /** A person approves or denies by the code on the page's form: the buttons are limited like the lookup, so guessing through them gains nothing. */
  decideFor(person: Approver, userCodeInput: string, decision: 'approve' | 'deny'): Promise<DeviceDecision> {
    return this.counted(person, () => this.decide(userCodeInput, decision === 'approve' ? 'approved' : 'denied', person));
  }

  /** A pending, unexpired login by its code; throws why not otherwise. Private: every door to it counts the try (findFor). */
  private async lookUp(userCodeInput: string): Promise<DeviceLoginForApproval> {
    const userCode = normalizeUserCode(userCodeInput);
    if (!userCode) throw new UndecidableDeviceLoginError('unknown');
    const login = await this.deviceLogins.findLatestByUserCode(userCode);
    if (!login) throw new UndecidableDeviceLoginError('unknown');
    const client = { id: login.clientId, displayName: login.clientDisplayName };
    if (login.status === 'cancelled') throw new UndecidableDeviceLoginError('cancelled', client);
    if (login.status !== 'pending') throw new UndecidableDeviceLoginError('decided', client);
    if (login.expiresAt.getTime() <= this.clock.now().getTime()) throw new UndecidableDeviceLoginError('expired', client);
    const scopes = parseScopes(login.scope) ?? [];
    return {
      id: login.id,
      userCode: formatUserCode(login.userCode),
      clientId: login.clientId,
      clientDisplayName: login.clientDisplayName,
      clientName: login.clientName,
      hostname: login.hostname,
      requestedIp: login.requestedIp,
      userAgent: login.userAgent,
      createdAt: login.createdAt,
      expiresAt: login.expiresAt,
      scopes: scopes.map((name) => ({ name, words: SCOPES[name] })),
      asksForAdmin: scopes.includes('admin'),
    };
  }

  /**
   * Binds the decision to the signed-in person who made it. Only a pending,
   * unexpired login can be decided, and only once (one conditional UPDATE). An approval is made in
   * sudo mode, which the page checks; a login that asked for `admin` has it for ADMIN_GRANT_SECONDS
   * from now, its tokens carrying it until then. Private: every door to it counts the try (decideFor).
   *
   * The same decision presented again by the person who made it (issue #32: a proxy that replayed
   * the Approve, a reload, a second click) is answered as the first was, `madeBefore`, and changes
   * nothing: it went through. Anyone else, or the other decision, is refused as before.
   */
  private async decide(userCodeInput: string, decision: 'approved' | 'denied', { userId, ip, userAgent, ...proof }: Approver): Promise<DeviceDecision> {
    const userCode = normalizeUserCode(userCodeInput);
    if (!userCode) throw new UndecidableDeviceLoginError('unknown');
    const now = this.clock.now();
    const adminUntil = new Date(now.getTime() + this.config.adminGrantSeconds * 1000);
    // The decision and its audit event in one statement; an approval's grant, the record of what
    // was approved and how the approving session proved its person, in the same transaction.
    const decided = await this.uow.run(async (tx) => {
      const login = await this.deviceLogins.decideWithAudit(tx, userCode, decision, userId, now, ip, adminUntil, clipUserAgent(userAgent));
      if (login && decision === 'approved') {
        await this.grants.create(tx, {
          // A device login's grant takes its id: the events that name the login name its grant.
          id: login.id,
          userId,
          clientId: login.clientId,
          grantType: 'device_code',
          scope: login.scope,
          adminUntil: login.adminUntil,
          credentialEpoch: proof.credentialEpoch,
          amr: proof.amr,
          secondFactor: proof.secondFactor,
          authTime: proof.authTime ?? null,
          webSession: proof.webSession ?? null,
          createdAt: now,
        });
      }
      return login;
    });
    if (!decided) return this.decidedBefore(userCode, decision, userId);
    this.metrics.deviceLogin(decision);
    return { id: decided.clientId, displayName: decided.clientDisplayName, madeBefore: false };
  }

  /**
   * A login that could not be decided now: this person's own earlier decision, the same, if it is
   * one (an approval stays one once its code was redeemed); else why it cannot be decided.
   */
  private async decidedBefore(userCode: string, decision: 'approved' | 'denied', userId: string): Promise<DeviceDecision> {
    const login = await this.deviceLogins.findLatestByUserCode(userCode);
    if (!login) throw new UndecidableDeviceLoginError('unknown');
    const client = { id: login.clientId, displayName: login.clientDisplayName };
    const sameDecision = decision === 'approved' ? login.status === 'approved' || login.status === 'redeemed' : login.status === 'denied';
    if (sameDecision && login.decidedByUserId === userId) return { ...client, madeBefore: true };
    if (login.status === 'cancelled') throw new UndecidableDeviceLoginError('cancelled', client);
    if (login.status === 'pending' && login.expiresAt.getTime() <= this.clock.now().getTime()) throw new UndecidableDeviceLoginError('expired', client);
    throw new UndecidableDeviceLoginError('decided', client);
  }

  /**
   * Runs one use of a typed user code under the wrong-code limit: the try is counted (in
   * Postgres, atomically, so every replica and any number of parallel requests share it) before
   * the code is looked up; a code that exists (pending, or expired, used, cancelled: a real code
   * all the same) gives its point back, so a person approving their own logins never runs out; an
   * unknown one is audited.
   */
  private async counted<T>(person: CodeHolder, use: () => Promise<T>): Promise<T> {
    const ip = person.ip ?? '';
    await this.limits.attemptUserCode(person.userId, ip);
    try {
      const result = await use();
      await this.limits.userCodeFound(person.userId, ip);
      return result;
    } catch (err) {
      if (err instanceof UndecidableDeviceLoginError) {
        if (err.reason === 'unknown') await this.audit.record('web.code_failed', { userId: person.userId, ip: person.ip });
        else await this.limits.userCodeFound(person.userId, ip);
      }
      throw err;
    }
  }
}
