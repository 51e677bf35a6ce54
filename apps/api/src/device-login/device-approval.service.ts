import { Injectable } from '@nestjs/common';
import { formatUserCode, normalizeUserCode, parseScopes, SCOPES } from '@prospect/contract';
import { Clock } from '../common/clock.js';
import { Metrics } from '../metrics/metrics.js';
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
  scopes: Array<{ name: string; words: string }>;
}

/** The browser's side of a device login: the person who finds it by its user code and decides it. */
@Injectable()
export class DeviceApprovalService {
  constructor(
    private readonly deviceLogins: DeviceLoginsRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  /** A pending, unexpired login by the code a person typed or followed; throws why not otherwise. */
  async findForApproval(userCodeInput: string): Promise<DeviceLoginForApproval> {
    const userCode = normalizeUserCode(userCodeInput);
    if (!userCode) throw new UndecidableDeviceLoginError('unknown');
    const login = await this.deviceLogins.findLatestByUserCode(userCode);
    if (!login) throw new UndecidableDeviceLoginError('unknown');
    const client = { id: login.clientId, displayName: login.clientDisplayName };
    if (login.status === 'cancelled') throw new UndecidableDeviceLoginError('cancelled', client);
    if (login.status !== 'pending') throw new UndecidableDeviceLoginError('decided', client);
    if (login.expiresAt.getTime() <= this.clock.now().getTime()) throw new UndecidableDeviceLoginError('expired', client);
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
      scopes: (parseScopes(login.scope) ?? []).map((name) => ({ name, words: SCOPES[name] })),
    };
  }

  /** @returns the client now signed in, for the page that says so. */
  approve(userCode: string, userId: string, ip: string | null): Promise<DeviceLoginClient> {
    return this.decide(userCode, 'approved', userId, ip);
  }

  deny(userCode: string, userId: string, ip: string | null): Promise<DeviceLoginClient> {
    return this.decide(userCode, 'denied', userId, ip);
  }

  /**
   * Binds the decision to the signed-in person who made it. Only a pending,
   * unexpired login can be decided, and only once (one conditional UPDATE).
   */
  private async decide(userCodeInput: string, decision: 'approved' | 'denied', userId: string, ip: string | null): Promise<DeviceLoginClient> {
    const userCode = normalizeUserCode(userCodeInput);
    if (!userCode) throw new UndecidableDeviceLoginError('unknown');
    // The decision and its audit event in one statement.
    const decided = await this.deviceLogins.decideWithAudit(userCode, decision, userId, this.clock.now(), ip);
    if (!decided) {
      const login = await this.findForApproval(userCode); // throws the precise reason
      throw new UndecidableDeviceLoginError('decided', { id: login.clientId, displayName: login.clientDisplayName });
    }
    this.metrics.deviceLogin(decision);
    return { id: decided.clientId, displayName: decided.clientDisplayName };
  }
}
