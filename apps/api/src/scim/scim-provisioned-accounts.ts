import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import { ScimDirectoryRepository } from './scim-directory.repository.js';

/**
 * What an organization's directory says of an account, for the organization's sign-in
 * (FederationSignIn, issue #47): a person its SCIM created is an invited member who signs in through
 * the organization's provider, and a person it deactivated signs in there no more.
 */
@Injectable()
export class ScimProvisionedAccounts {
  constructor(private readonly directory: ScimDirectoryRepository) {}

  /**
   * In `tx` (read after the caller locked the account):
   * - 'unclaimed': this organization's SCIM created the account (it did not exist before), the person
   *   is active, and the account is still as the directory made it: never a password, the same
   *   credential epoch (no address change, no disable since), its address still the userName;
   * - 'deactivated': this organization's SCIM provisioned the person and set them inactive;
   * - 'other': provisioned, but linked from an account that existed, or changed since it was made;
   * - undefined: this organization's SCIM does not know the account.
   */
  stateOf(tx: Tx, organizationId: string, userId: string): Promise<'unclaimed' | 'deactivated' | 'other' | undefined> {
    return this.directory.accountState(tx, organizationId, userId);
  }
}
