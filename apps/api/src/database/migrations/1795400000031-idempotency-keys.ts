import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A write sent again is harmless (issue #32, item 5): `POST /api/cli/auth/token` with an
 * `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header) answers the same key, from the same
 * credential with the same body, with the same token for a day (IDEMPOTENCY_WINDOW_HOURS).
 *
 * - `lookup_hash`: the SHA-256 of the operation, the caller's credential (its bearer token, or its
 *   browser session's id) and the key. Neither the credential nor the key is stored, so the table
 *   says nothing of whose key a row is beyond `user_id`.
 * - `request_hash`: the SHA-256 of the request's body: the same key with another body is refused (422).
 * - `reply_sealed`: the answer (the new token's secret with it), sealed (common/sealed.ts) under a
 *   key derived from the credential and the Idempotency-Key, which the server never stores: the
 *   database alone never reveals the token, as for a device login's sealed poll reply.
 * - `user_id`: the caller; its rows go with its account.
 * Rows older than the window are deleted by the retention job (by `created_at`).
 */
export class IdempotencyKeys1795400000031 implements MigrationInterface {
  name = 'IdempotencyKeys1795400000031';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE idempotency_keys (
        lookup_hash  bytea PRIMARY KEY,
        user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        request_hash bytea NOT NULL,
        reply_sealed bytea NOT NULL,
        created_at   timestamptz NOT NULL
      )`);
    await db.query(`CREATE INDEX idempotency_keys_user ON idempotency_keys (user_id)`);
    await db.query(`CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE idempotency_keys`);
  }
}
