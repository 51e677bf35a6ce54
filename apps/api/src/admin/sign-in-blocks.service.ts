import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';

/** An admin lifts the block that failed sign-ins from unknown browsers put on an account. */
@Injectable()
export class SignInBlocksService {
  constructor(
    private readonly limits: RateLimits,
    private readonly users: UsersService,
    private readonly audit: AuditService,
  ) {}

  /** True when the account had failures counted; audited with the acting admin and the account (when it exists). */
  async clear(email: string, adminId: string, ip: string | null): Promise<boolean> {
    const cleared = await this.limits.clearSignInBlock(normalizeEmail(email));
    const account = await this.users.findByEmail(email);
    await this.audit.record('admin.clear_sign_in_block', { userId: adminId, ip, detail: { accountId: account?.id ?? null, cleared } });
    return cleared;
  }
}
