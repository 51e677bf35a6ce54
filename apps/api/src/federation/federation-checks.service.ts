import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { AuditService } from '../audit/audit.service.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { FederatedEndings } from './federated-endings.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { BackgroundWrites } from '../database/background-writes.js';
import { FederatedIdentitiesRepository } from './federated-identities.repository.js';
import { IdentityProvidersRepository } from './identity-providers.repository.js';
import { RelyingParty } from './relying-party.js';

/** How often each replica looks for links due a check. */
const CHECK_EVERY_MS = 60_000;
/** How long a replica holds the links it claimed (a check that died is taken up again after it). */
const CLAIM_MS = 2 * 60_000;
/** Links one round checks at most, per replica. */
const BATCH = 20;

/**
 * Leavers (issue #34): when the company directory says no, Prospect stops letting the person in.
 * A link whose provider last said yes more than FEDERATION_CHECK_SECONDS ago, and that has a
 * browser session open, is checked by refreshing the provider's tokens: invalid_grant (the grant
 * or the account is gone at the provider) marks the link refused and ends its sessions in one
 * statement (the serializer refuses any it missed at their next request); a yes records the time,
 * shown to admins as "last verified at the provider". Any other failure (the provider away) is
 * tried again at a later round. Links of providers that give no refresh token are verified only
 * at each sign-in. Every replica runs it; the claim (SKIP LOCKED) keeps them on different links.
 */
@Injectable()
export class FederationChecks {
  private readonly logger = new Logger(FederationChecks.name);

  constructor(
    private readonly links: FederatedIdentitiesRepository,
    private readonly providers: IdentityProvidersRepository,
    private readonly relyingParty: RelyingParty,
    private readonly background: BackgroundWrites,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly endings: FederatedEndings,
    private readonly audit: AuditService,
  ) {}

  @Interval(CHECK_EVERY_MS)
  scheduledCheck(): void {
    this.background.run('check identity-provider links', () => this.checkDue());
  }

  /** One round: the links due, each asked of its provider; how many were checked and refused. */
  async checkDue(): Promise<{ checked: number; refused: number }> {
    const now = this.clock.now();
    const due = await this.links.claimDue(now, new Date(now.getTime() - this.config.federationCheckSeconds * 1000), new Date(now.getTime() + CLAIM_MS), BATCH);
    let refused = 0;
    for (const link of due) {
      const provider = await this.providers.findById(link.providerId);
      const token = provider && link.refreshTokenSealed ? await this.relyingParty.openRefreshToken(link.issuer, link.subject, link.refreshTokenSealed) : null;
      if (!provider || !token) continue;
      try {
        const answer = await this.relyingParty.recheck(provider, token);
        if (answer === 'refused') {
          const sessions = await this.refuse(link.id, provider.displayName, 'the provider refused to refresh its tokens (invalid_grant)');
          if (sessions !== null) refused++;
          this.logger.log(`${provider.id} refused a linked person (invalid_grant): ${sessions ?? 0} browser sessions ended`);
        } else {
          await this.links.checkPassed(link.id, await this.relyingParty.sealRefreshToken(link.issuer, link.subject, answer.refreshToken), this.clock.now());
        }
      } catch (err) {
        this.logger.warn(`could not check a link with ${provider.id}: ${(err as Error).message}`);
      }
    }
    return { checked: due.length, refused };
  }

  /**
   * The provider's refusal of a link (a leaver): the link is marked refused and its browser
   * sessions end with the grants they approved, audited, in one transaction; how many sessions ended, or null when it was
   * refused already.
   */
  private refuse(linkId: string, providerName: string, reason: string): Promise<number | null> {
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const refused = await this.links.markRefused(tx, linkId, now);
      if (!refused) return null;
      const { sessions, grants } = await this.endings.ofLink(tx, refused.id, 'identity provider refused the person');
      const detail = { providerId: refused.providerId, label: providerName, linkId: refused.id, reason, sessions, grants };
      await this.audit.record('federation.refused_by_provider', { userId: refused.userId, ip: null, detail, at: now }, tx);
      return sessions;
    });
  }
}
