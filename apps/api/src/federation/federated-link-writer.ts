import { Injectable } from '@nestjs/common';
import { hasUnsafeText } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import type { Tx } from '../database/tx.js';
import type { User } from '../users/user.entity.js';
import { UsersService } from '../users/users.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { AccountCredentials } from './account-credentials.js';
import { FederatedIdentitiesRepository, type LinkProof } from './federated-identities.repository.js';
import type { IdentityProviderRow } from './identity-providers.repository.js';
import type { ProviderIdentity } from './relying-party.js';

/**
 * The writes that make a link of an identity to an account, in the caller's transaction
 * (FederationSignIn decides when, and words the refusals): the account a first sign-in makes,
 * or an existing account the person proved, with what that proof ends.
 */
@Injectable()
export class FederatedLinkWriter {
  constructor(
    private readonly links: FederatedIdentitiesRepository,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly webSessions: WebSessions,
    private readonly credentials: AccountCredentials,
  ) {}

  /** The account a first sign-in makes for `email` (verified by the provider), linked to the identity at once; both audited. */
  async newAccount(
    tx: Tx,
    provider: IdentityProviderRow,
    identity: ProviderIdentity,
    email: string,
    refreshTokenSealed: string | undefined,
    now: Date,
    ip: string | null,
  ): Promise<{ user: User; linkId: string }> {
    const user = await this.users.create({ email, name: nameFrom(identity, email), emailVerified: true }, tx);
    const linkId = await this.links.insert(tx, { userId: user.id, providerId: provider.id, issuer: identity.issuer, subject: identity.subject, email, refreshTokenSealed }, now);
    const detail = { providerId: provider.id, label: provider.displayName, linkId };
    await this.audit.record('federation.signup', { userId: user.id, ip, detail }, tx);
    await this.audit.record('federation.link', { userId: user.id, ip, detail: { ...detail, proof: 'the first sign-in made the account' } }, tx);
    return { user, linkId };
  }

  /**
   * Links an existing account the person just proved, in one locked transaction (`tx`): the
   * account locked and still as the provider's answer found it (lockForLink). Proven by the mailed
   * link (`proof` 'mail'), whoever created the account may not be this person, so what was set up
   * before ends here too, as a reset that proves an address does: its password, other links,
   * mailed links, second factors and passkeys, and browser sessions, and the epoch moves on (the
   * caller revokes its tokens); each by the module that owns those rows, in this `tx`, in the order
   * the single statement of before wrote them. Either way the address counts as verified, and the
   * link is audited.
   * @returns the link's id; 'changed' when the account changed meanwhile; 'taken' when that
   *   identity is linked to another account, or this account to another identity of the provider.
   */
  async linkProven(
    tx: Tx,
    link: { userId: string; epoch: number; email: string; providerId: string; providerName: string; issuer: string; subject: string; refreshTokenSealed?: string },
    proof: Exclude<LinkProof, 'directory'>,
    now: Date,
    ip: string | null,
  ): Promise<string | 'changed' | 'taken'> {
    const state = await this.links.lockForLink(tx, link, proof);
    if (state !== 'free') return state;
    if (proof === 'mail') {
      await this.links.deleteAllOf(tx, link.userId);
      await this.users.recordProvenLink(tx, link.userId, now, true);
      await this.credentials.endLinksAndFactors(tx, link.userId, now);
      await this.webSessions.endAllFor(link.userId, tx);
    } else {
      await this.users.recordProvenLink(tx, link.userId, now, false);
    }
    const id = await this.links.insert(tx, link, now);
    const said = proof === 'mail' ? 'a link mailed to the address: every earlier session, second factor, passkey and password ended' : 'a sign-in to the account';
    await this.audit.record('federation.link', { userId: link.userId, ip, detail: { providerId: link.providerId, label: link.providerName, linkId: id, proof: said }, at: now }, tx);
    return id;
  }

  /**
   * Links an account the organization's SCIM created and nobody has claimed (FederationSignIn
   * decided it may, issue #47), in `tx`: the account locked and still as the provider's answer
   * found it, with no link at all (lockForLink 'directory'). Nothing of the account ends: it never
   * had anything. Audited for the person and in the organization's log.
   * @returns the link's id; 'changed' or 'taken' as linkProven (the caller falls back to the proof).
   */
  async linkProvisioned(
    tx: Tx,
    link: { userId: string; epoch: number; email: string; providerId: string; providerName: string; issuer: string; subject: string; refreshTokenSealed?: string },
    organizationId: string,
    now: Date,
    ip: string | null,
  ): Promise<string | 'changed' | 'taken'> {
    const state = await this.links.lockForLink(tx, link, 'directory');
    if (state !== 'free') return state;
    const id = await this.links.insert(tx, link, now);
    const detail = { providerId: link.providerId, label: link.providerName, linkId: id, email: link.email, proof: 'created by the organization’s SCIM, never claimed' };
    await this.audit.record('federation.link', { userId: link.userId, organizationId, ip, detail, at: now }, tx);
    return id;
  }
}

/** The provider's name for the person, if it is one Prospect can show; else the address's local part. */
function nameFrom(identity: ProviderIdentity, email: string): string {
  const name = identity.name?.trim();
  return name && name.length <= 100 && !hasUnsafeText(name) ? name : email.slice(0, email.indexOf('@'));
}
