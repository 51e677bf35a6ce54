import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';

/** accounts/'s part of a link proven by a mailed link (it owns the links and the second factors). */
export interface AccountCredentialsEnder {
  /** Uses up every unused mailed link of the account and deletes its TOTP key, recovery codes and passkeys, in `tx`. */
  endLinksAndFactors(tx: Tx, userId: string, now: Date): Promise<void>;
}

/**
 * What an account had set up beyond its password, ended when an identity-provider link is proven
 * by a mail to its address (FederationSignIn: the pre-hijacking defence). accounts/ owns those
 * rows and sits above federation/ (it asks FederationPolicy), so it attaches its part here when it
 * is made, as refresh-tokens/ does for tokens/; federation/ imports nothing of accounts/. Without
 * it attached the wipe would be partial, so a mailed proof refuses instead.
 */
@Injectable()
export class AccountCredentials {
  private ender?: AccountCredentialsEnder;

  attach(ender: AccountCredentialsEnder): void {
    this.ender = ender;
  }

  endLinksAndFactors(tx: Tx, userId: string, now: Date): Promise<void> {
    if (!this.ender) throw new Error('accounts/ has not attached its credentials (AccountsModule not loaded): a mailed proof cannot end them');
    return this.ender.endLinksAndFactors(tx, userId, now);
  }
}
