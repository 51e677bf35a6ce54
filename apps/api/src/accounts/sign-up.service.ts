import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { ApiException } from '../common/api-exception.js';
import { AppConfig } from '../config/app-config.js';
import type { User } from '../users/user.entity.js';
import { UsersService } from '../users/users.service.js';
import { EmailVerificationService } from './email-verification.service.js';

export interface SignUpInput {
  name: string;
  email: string;
  password: string;
}

/**
 * Sign-up's rules. Every new account is sent a verification link (but the first administrator's, made with the setup code). With REQUIRE_EMAIL_VERIFICATION
 * the answer is the same whether or not the address has an account ("check your e-mail"): a
 * new one gets its link, an existing owner a mail saying someone tried. Without it (no mail to
 * answer through) the new person is signed in at once, and a taken address is said so.
 */
@Injectable()
export class SignUpService {
  constructor(
    private readonly users: UsersService,
    private readonly verification: EmailVerificationService,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  /**
   * The new account to sign in, or 'check-email' when the answer must not tell (see above).
   * `next`: where the verification link leads (a checked path on this site).
   * @throws ApiException 409 for a taken address without verification; InvalidSetupCodeError.
   */
  async signUp(input: SignUpInput, options: { next: string; setupCode?: string; ip: string | null }): Promise<User | 'check-email'> {
    // The first administrator's address is verified by the setup code (UsersService.createFirstAdmin): no mail to confirm it.
    if (options.setupCode) return this.created(await this.users.createFirstAdmin(input, options.setupCode), options, { verified: true });
    if (!this.config.requireEmailVerification) return this.created(await this.users.create(input), options);
    try {
      await this.created(await this.users.create(input), options);
    } catch (err) {
      if (!(err instanceof ApiException && err.getStatus() === 409)) throw err;
      const owner = await this.users.findByEmail(input.email);
      if (owner) await this.verification.tellOwnerOfSignupAttempt(owner);
    }
    return 'check-email';
  }

  private async created(user: User, options: { next: string; ip: string | null }, { verified = false } = {}): Promise<User> {
    await this.audit.record('web.signup', { userId: user.id, ip: options.ip });
    if (!verified) await this.verification.send(user.id, options.next, { resend: false });
    return user;
  }
}
