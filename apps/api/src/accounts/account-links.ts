import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import { AccountTokensRepository } from './account-tokens.repository.js';

/** The mailed links' tokens (`account_tokens`: resets, verifications, invitations, new addresses) as other modules may touch them. */
@Injectable()
export class AccountLinks {
  constructor(private readonly tokens: AccountTokensRepository) {}

  /** At most `limit` links expired before `now`, in `tx` (retention); how many. */
  purgeExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.tokens.deleteExpired(tx, now, limit);
  }
}
