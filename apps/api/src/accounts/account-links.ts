import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import { AccountCredentials } from '../federation/account-credentials.js';
import { AccountTokensRepository } from './account-tokens.repository.js';

/** The mailed links' tokens (`account_tokens`: resets, verifications, invitations, new addresses) as other modules may touch them. */
@Injectable()
export class AccountLinks {
  constructor(
    private readonly tokens: AccountTokensRepository,
    credentials: AccountCredentials,
  ) {
    // A link proven by a mailed proof (federation/, below this module) ends the account's links and factors through us.
    credentials.attach({ endLinksAndFactors: (tx, userId, now) => this.tokens.endLinksAndFactors(tx, userId, now) });
  }

  /** At most `limit` links expired before `now`, in `tx` (retention); how many. */
  purgeExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.tokens.deleteExpired(tx, now, limit);
  }
}
