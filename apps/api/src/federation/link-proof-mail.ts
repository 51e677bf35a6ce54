import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { UsersService } from '../users/users.service.js';
import type { PendingFederatedLink } from '../web-sessions/web-account.js';
import { PENDING_LINK_MINUTES } from './federation-policy.js';

/** Prefix of the mailed link that proves an account for linking (256 random bits). */
export const LINK_PROOF_TOKEN_PREFIX = 'prsf_';

/**
 * The mailed link that proves an account by its address before a provider's identity is linked to
 * it (FederationSignIn.mailProof): its token goes to the address alone, its hash stays in the
 * browser's pending link.
 */
@Injectable()
export class LinkProofMail {
  constructor(
    private readonly users: UsersService,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /** Mails the link to the address the provider asserted (the account's); the token's hash. */
  async send(pending: PendingFederatedLink): Promise<string> {
    const token = generateSecret(LINK_PROOF_TOKEN_PREFIX);
    const account = await this.users.findById(pending.userId);
    await this.mailer.send(
      composeMail(pending.email, `Link ${pending.providerName} to your Prospect account`, {
        paragraphs: [
          `Hello ${account?.name ?? pending.email},`,
          `Someone (we hope you) signed in to Prospect at ${this.config.publicUrl} with ${pending.providerName} as ${pending.email}, which already has a Prospect account. Open this link in the same browser, within ${PENDING_LINK_MINUTES} minutes, to link them.`,
          'Linking this way makes the account yours alone: its password, second factors, passkeys, sessions and CLI tokens from before end. Set a new password later if you want one.',
        ],
        link: { url: `${this.config.publicUrl}/login/link/confirm?token=${token}`, label: `Link ${pending.providerName}` },
        footer: 'If it was not you, ignore this mail: nothing changes.',
      }),
    );
    return sha256(token).toString('base64url');
  }

  /** Whether `token` is the mailed link of this pending link, still in time. */
  matches(pending: PendingFederatedLink | undefined, token: string): pending is PendingFederatedLink & { mail: { hash: string; at: number } } {
    if (!pending?.mail || !looksLikeSecret(token, LINK_PROOF_TOKEN_PREFIX)) return false;
    if (this.clock.now().getTime() - pending.mail.at > PENDING_LINK_MINUTES * 60_000) return false;
    return sha256(token).toString('base64url') === pending.mail.hash;
  }
}
