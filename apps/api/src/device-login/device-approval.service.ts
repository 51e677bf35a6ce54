import { Injectable } from '@nestjs/common';
import { formatUserCode, normalizeUserCode } from '@prospect/contract';
import { Clock } from '../common/clock.js';
import { Metrics } from '../metrics/metrics.js';
import { DeviceLoginsRepository } from './device-logins.repository.js';

/** Why a person cannot decide a device login; each gets its own page. */
export type UndecidableReason = 'unknown' | 'expired' | 'decided' | 'cancelled';

export class UndecidableDeviceLoginError extends Error {
  constructor(readonly reason: UndecidableReason) {
    super(`device login ${reason}`);
  }
}

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
    if (login.status === 'cancelled') throw new UndecidableDeviceLoginError('cancelled');
    if (login.status !== 'pending') throw new UndecidableDeviceLoginError('decided');
    if (login.expiresAt.getTime() <= this.clock.now().getTime()) throw new UndecidableDeviceLoginError('expired');
    return {
      id: login.id,
      userCode: formatUserCode(login.userCode),
      clientDisplayName: login.clientDisplayName,
      clientName: login.clientName,
      hostname: login.hostname,
      requestedIp: login.requestedIp,
      userAgent: login.userAgent,
      createdAt: login.createdAt,
      expiresAt: login.expiresAt,
    };
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
    // The decision and its audit event in one statement.
    if (!(await this.deviceLogins.decideWithAudit(userCode, decision, userId, this.clock.now(), ip))) {
      await this.findForApproval(userCode); // throws the precise reason
      throw new UndecidableDeviceLoginError('decided');
    }
    this.metrics.deviceLogin(decision);
  }
}
