import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/**
 * Our statements on `web_sessions`. The row of each session is written and read by
 * connect-pg-simple itself (hashed-session-store.ts); these are the ones it has no call for.
 */
@Injectable()
export class WebSessionsRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Writes back a session a request read (HashedSessionStore): only while its row is there, never
   * inserting it again after an ending deleted it; whether it was.
   */
  async writeBack(sidHash: string, sess: object, expire: Date): Promise<boolean> {
    return (await this.sql.count(`UPDATE web_sessions SET sess = $2, expire = $3 WHERE sid = $1`, [sidHash, JSON.stringify(sess), expire])) > 0;
  }

  /** Every session of this person (in `tx` when given); how many. */
  deleteAllOf(userId: string, tx?: Tx): Promise<number> {
    return this.sql.count(`DELETE FROM web_sessions WHERE user_id = $1`, [userId], tx);
  }

  /** The sessions started through one identity-provider link, in `tx`; how many. */
  deleteOfFederatedLink(tx: Tx, linkId: string): Promise<number> {
    return this.sql.count(`DELETE FROM web_sessions WHERE federated_link_id = $1`, [linkId], tx);
  }

  /** The sessions started through any link of one identity provider, in `tx`; how many. */
  deleteOfProvider(tx: Tx, providerId: string): Promise<number> {
    return this.sql.count(`DELETE FROM web_sessions WHERE federated_link_id IN (SELECT id FROM federated_identities WHERE provider_id = $1)`, [providerId], tx);
  }

  /**
   * The sessions started through a link of one identity provider whose address, or whose account's
   * address, is in `domain` (an organization's provider losing that domain), in `tx`; how many.
   */
  deleteOfProviderForDomain(tx: Tx, providerId: string, domain: string): Promise<number> {
    return this.sql.count(
      `DELETE FROM web_sessions WHERE federated_link_id IN (
         SELECT l.id FROM federated_identities l JOIN users u ON u.id = l.user_id
          WHERE l.provider_id = $1
            AND (lower(substring(l.email FROM '[^@]+$')) = $2 OR lower(substring(u.email FROM '[^@]+$')) = $2))`,
      [providerId, domain],
      tx,
    );
  }

  /** At most `limit` sessions past their expiry (retention; the library's own pruning is off); how many. */
  deleteExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM web_sessions WHERE sid IN (SELECT sid FROM web_sessions WHERE expire < $1 LIMIT $2)`, [now, limit], tx);
  }
}
