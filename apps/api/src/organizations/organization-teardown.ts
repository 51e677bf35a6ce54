import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';

/** What a module that keeps rows of an organization ends when the organization is deleted, in the deletion's `tx`. */
export type OrganizationEnding = (tx: Tx, organizationId: string, now: Date) => Promise<void>;

/**
 * Deleting an organization ends everything it owns. Its own tables go by their foreign keys; a
 * module above organizations/ that keeps more (federation/: the browser sessions its providers
 * started) attaches its part here when it is made, as refresh-tokens/ attaches to tokens/'s
 * FamilyMembers, so organizations/ imports none of them.
 */
@Injectable()
export class OrganizationTeardown {
  private readonly endings: OrganizationEnding[] = [];

  attach(ending: OrganizationEnding): void {
    this.endings.push(ending);
  }

  async run(tx: Tx, organizationId: string, now: Date): Promise<void> {
    for (const end of this.endings) await end(tx, organizationId, now);
  }
}
