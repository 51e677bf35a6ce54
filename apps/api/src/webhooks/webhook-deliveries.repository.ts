import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** A delivery a sender claimed. */
export interface ClaimedDelivery {
  id: string;
  kind: 'event' | 'logout';
  webhookId: string | null;
  targetUrl: string | null;
  messageId: string;
  payload: string;
  /** This try counted. */
  attempts: number;
  createdAt: Date;
  /** Identifies this claim: outcomes are written only while it is still the row's. */
  claimedUntil: Date;
}

/** One row of an endpoint's delivery log. */
export interface DeliveryLogRow {
  id: string;
  messageId: string;
  eventType: string | null;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date;
  deliveredAt: Date | null;
  givenUpAt: Date | null;
  createdAt: Date;
  redeliveryOf: string | null;
}

const UNFINISHED = `delivered_at IS NULL AND given_up_at IS NULL`;
const LOG_COLUMNS = `id, message_id AS "messageId", event_type AS "eventType", attempts, last_status AS "lastStatus", last_error AS "lastError",
  next_attempt_at AS "nextAttemptAt", delivered_at AS "deliveredAt", given_up_at AS "givenUpAt", created_at AS "createdAt", redelivery_of AS "redeliveryOf"`;

/**
 * Every statement on `webhook_deliveries`, the outbox of webhooks and back-channel logout tokens
 * (migration 043). Each change is one statement; times are the injected clock's (tests move it
 * past a backoff), passed in.
 */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * The endpoint's deliveries of these events, in their order (`seq` follows it); an event it has
   * already (a dispatch repeated after a crash) is not written twice.
   */
  async insertEvents(tx: Tx, webhookId: string, events: Array<{ id: string; type: string; body: string }>, now: Date): Promise<void> {
    if (!events.length) return;
    await this.sql.rows(
      `INSERT INTO webhook_deliveries (kind, webhook_id, message_id, event_type, payload, next_attempt_at, created_at)
       SELECT 'event', $1, e.id, e.type, e.body, $5, $5
         FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS e(id, type, body, n)
        ORDER BY e.n
       ON CONFLICT (webhook_id, message_id) WHERE redelivery_of IS NULL DO NOTHING`,
      [webhookId, events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.body), now],
      tx,
    );
  }

  /**
   * A logout token for each client with a back-channel logout URI among these grants' clients, in
   * the revoking transaction (so it goes if and only if the revocation commits). The payload is the
   * token's claims; it is signed at each try.
   */
  async insertLogouts(tx: Tx, grantIds: readonly string[], now: Date): Promise<number> {
    if (!grantIds.length) return 0;
    return this.sql.count(
      `INSERT INTO webhook_deliveries (kind, client_id, target_url, message_id, payload, next_attempt_at, created_at)
       SELECT 'logout', c.id, c.backchannel_logout_uri, gen_random_uuid()::text,
              json_build_object('aud', c.id, 'sub', g.user_id::text, 'grant', g.id::text)::text, $2, $2
         FROM grants g JOIN oauth_clients c ON c.id = g.client_id
        WHERE g.id = ANY ($1::uuid[]) AND c.backchannel_logout_uri IS NOT NULL`,
      [grantIds, now],
      tx,
    );
  }

  /**
   * Claims up to `limit` due deliveries until `claimUntil`, counting the try, in one statement.
   * Order per endpoint: a delivery is due only when no earlier one of its endpoint is unfinished
   * (claimed or not), so event N+1 never goes before N succeeded (or was given up). A disabled
   * endpoint's deliveries wait. Rows another replica holds are skipped.
   */
  claimDue(limit: number, now: Date, claimUntil: Date): Promise<ClaimedDelivery[]> {
    return this.sql.rows<ClaimedDelivery>(
      `WITH due AS (
         SELECT d.id FROM webhook_deliveries d LEFT JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.${UNFINISHED} AND d.next_attempt_at <= $2 AND (d.claimed_until IS NULL OR d.claimed_until <= $2)
            AND (d.kind = 'logout' OR (w.disabled_at IS NULL AND NOT EXISTS (
                  SELECT 1 FROM webhook_deliveries p WHERE p.webhook_id = d.webhook_id AND p.seq < d.seq AND p.delivered_at IS NULL AND p.given_up_at IS NULL)))
          ORDER BY d.next_attempt_at, d.seq
          LIMIT $1
          FOR UPDATE OF d SKIP LOCKED
       )
       UPDATE webhook_deliveries o SET claimed_until = $3, attempts = o.attempts + 1
         FROM due WHERE o.id = due.id
       RETURNING o.id, o.kind, o.webhook_id AS "webhookId", o.target_url AS "targetUrl", o.message_id AS "messageId", o.payload,
                 o.attempts, o.created_at AS "createdAt", o.claimed_until AS "claimedUntil"`,
      [limit, now, claimUntil],
    );
  }

  async markDelivered(id: string, claimedUntil: Date, status: number, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE webhook_deliveries SET delivered_at = $4, last_status = $3, last_error = NULL, claimed_until = NULL
        WHERE id = $1 AND claimed_until = $2 AND ${UNFINISHED}`,
      [id, claimedUntil, status, now],
    );
  }

  async retryAt(id: string, claimedUntil: Date, nextAttemptAt: Date, status: number | null, error: string): Promise<void> {
    await this.sql.rows(
      `UPDATE webhook_deliveries SET next_attempt_at = $3, last_status = $4, last_error = $5, claimed_until = NULL
        WHERE id = $1 AND claimed_until = $2 AND ${UNFINISHED}`,
      [id, claimedUntil, nextAttemptAt, status, error],
    );
  }

  /** Given up; whether this claim still held it (another replica's outcome came first otherwise). */
  async giveUp(tx: Tx, id: string, claimedUntil: Date, status: number | null, error: string, now: Date): Promise<boolean> {
    const n = await this.sql.count(
      `UPDATE webhook_deliveries SET given_up_at = $5, last_status = $3, last_error = $4, claimed_until = NULL
        WHERE id = $1 AND claimed_until = $2 AND ${UNFINISHED}`,
      [id, claimedUntil, status, error, now],
      tx,
    );
    return n > 0;
  }

  /** Claims given back unfinished at shutdown: due at once for any replica. */
  async release(ids: string[], claimedUntil: Date, reason: string): Promise<void> {
    await this.sql.rows(
      `UPDATE webhook_deliveries SET claimed_until = NULL, attempts = greatest(attempts - 1, 0), last_error = $3
        WHERE id = ANY ($1::uuid[]) AND claimed_until = $2 AND ${UNFINISHED}`,
      [ids, claimedUntil, reason],
    );
  }

  /** An endpoint's log, newest first, `limit` from before `beforeSeq` (a page). */
  log(webhookId: string, limit: number): Promise<DeliveryLogRow[]> {
    return this.sql.rows<DeliveryLogRow>(`SELECT ${LOG_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq DESC LIMIT $2`, [webhookId, limit]);
  }

  /**
   * The event of `deliveryId` again, as a new delivery at the end of the endpoint's queue (the same
   * `webhook-id` and body, so a receiver that has it already can tell); undefined when no such delivery.
   */
  async redeliver(webhookId: string, deliveryId: string, now: Date): Promise<DeliveryLogRow | undefined> {
    const [row] = await this.sql.rows<DeliveryLogRow>(
      `INSERT INTO webhook_deliveries (kind, webhook_id, message_id, event_type, payload, redelivery_of, next_attempt_at, created_at)
       SELECT 'event', webhook_id, message_id, event_type, payload, COALESCE(redelivery_of, id), $3, $3
         FROM webhook_deliveries WHERE webhook_id = $1 AND id = $2 AND payload IS NOT NULL
       RETURNING ${LOG_COLUMNS}`,
      [webhookId, deliveryId, now],
    );
    return row;
  }

  /** At most `limit` deliveries that ended (delivered or given up) before `before` (retention); how many. */
  deleteEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE delivered_at < $1 OR given_up_at < $1 LIMIT $2)`,
      [before, limit],
      tx,
    );
  }
}
