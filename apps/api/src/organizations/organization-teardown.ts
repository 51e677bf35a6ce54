import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';

/** What a module that keeps rows of an organization ends when the organization is deleted, in the deletion's `tx`. */
export type OrganizationEnding = (tx: Tx, organizationId: string, now: Date) => Promise<void>;
/** What such a module ends when the organization no longer has a verified domain, in that change's `tx`; how many browser sessions ended. */
export type DomainEnding = (tx: Tx, organizationId: string, domain: string, now: Date) => Promise<number>;

/**
 * Deleting an organization ends everything it owns, and a verified domain removed ends what was
 * signed in through it. Its own tables go by their foreign keys; a
 * module above organizations/ that keeps more (federation/: the browser sessions its providers
 * started) attaches its part here when it is made, as refresh-tokens/ attaches to tokens/'s
 * FamilyMembers, so organizations/ imports none of them.
 */
@Injectable()
export class OrganizationTeardown {
  private readonly endings: OrganizationEnding[] = [];
  private readonly domainEndings: DomainEnding[] = [];

  attach(ending: OrganizationEnding): void {
    this.endings.push(ending);
  }

  /** Attaches what ends with a verified domain of an organization (federation/: the sessions its providers started for that domain). */
  attachDomainEnding(ending: DomainEnding): void {
    this.domainEndings.push(ending);
  }

  async run(tx: Tx, organizationId: string, now: Date): Promise<void> {
    for (const end of this.endings) await end(tx, organizationId, now);
  }

  /** A verified domain of the organization is gone (removed), in that change's `tx`: how many browser sessions ended with it. */
  async endDomain(tx: Tx, organizationId: string, domain: string, now: Date): Promise<number> {
    let sessions = 0;
    for (const end of this.domainEndings) sessions += await end(tx, organizationId, domain, now);
    return sessions;
  }
}
