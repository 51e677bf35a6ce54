import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import { TokensService } from '../tokens/tokens.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { FederatedIdentitiesRepository } from './federated-identities.repository.js';

/** What one ending ended: browser sessions, and grants (CLI device logins, OAuth code grants, with their tokens). */
export interface Ended {
  sessions: number;
  grants: number;
}

/**
 * What ends when a provider or a link no longer vouches for the people it signed in (disabled,
 * deleted, its domains narrowed, the organization's domain removed, the link refused by the
 * provider or removed by an admin): the browser sessions started through it (WebSessions) and the
 * grants those sessions approved (`grants.federated_link_id`: the CLI's device logins and OAuth
 * code grants, with every token of theirs), in the caller's transaction. A credential ends with
 * the state it was issued for: a session's approval is no longer than the session.
 */
@Injectable()
export class FederatedEndings {
  constructor(
    private readonly links: FederatedIdentitiesRepository,
    private readonly webSessions: WebSessions,
    private readonly tokens: TokensService,
  ) {}

  /** Everything started through any link of the provider (disabled or deleted: before its links go). */
  async ofProvider(tx: Tx, providerId: string, reason: string): Promise<Ended> {
    const sessions = await this.webSessions.endForProvider(tx, providerId);
    const grants = await this.tokens.revokeGrantsOfFederatedLinks(tx, await this.links.idsOfProvider(tx, providerId), reason);
    return { sessions, grants };
  }

  /** Everything the provider started for addresses of `domain` (the provider, or its organization, no longer has the domain). */
  async ofProviderDomain(tx: Tx, providerId: string, domain: string, reason: string): Promise<Ended> {
    const sessions = await this.webSessions.endForProviderDomain(tx, providerId, domain);
    const grants = await this.tokens.revokeGrantsOfFederatedLinks(tx, await this.links.idsOfProviderForDomain(tx, providerId, domain), reason);
    return { sessions, grants };
  }

  /** Everything started through one link (refused by its provider, or removed). */
  async ofLink(tx: Tx, linkId: string, reason: string): Promise<Ended> {
    const sessions = await this.webSessions.endForFederatedLink(tx, linkId);
    const grants = await this.tokens.revokeGrantsOfFederatedLinks(tx, [linkId], reason);
    return { sessions, grants };
  }
}
