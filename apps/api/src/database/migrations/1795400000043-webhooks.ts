import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signed webhooks per organization and OpenID Connect Back-Channel Logout (issue #46, items 3-4;
 * both owned by `webhooks/`):
 * - `webhooks`: an organization's endpoints. The signing secret is sealed (signing needs the
 *   secret itself, so a hash would not do); a rotated one keeps signing until
 *   `previous_secret_until`. `cursor` is the event source's position: events after it are not yet
 *   written as deliveries of this endpoint (the dispatcher moves it in the transaction that
 *   writes them).
 * - `webhook_deliveries`: the durable outbox of every outbound POST, a webhook's event (`kind`
 *   'event', the body kept as the exact text signed, so a retry sends the same bytes) or a client's
 *   logout token (`kind` 'logout', its claims; signed at each try). `seq` is the order per
 *   endpoint; one delivery per endpoint and event (a redelivery is a new row pointing at the first).
 * - `oauth_clients.backchannel_logout_uri` (owned by `oauth/`): where a client's logout tokens go.
 */
export class Webhooks1795400000043 implements MigrationInterface {
  name = 'Webhooks1795400000043';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE webhooks (
        id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        organization_id         uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        url                     text NOT NULL CHECK (length(url) <= 2000),
        types                   text[] NOT NULL DEFAULT '{}',
        secret_sealed           bytea NOT NULL,
        previous_secret_sealed  bytea,
        previous_secret_until   timestamptz,
        cursor                  text NOT NULL,
        disabled_at             timestamptz,
        disabled_reason         text,
        created_by_user_id      uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at              timestamptz NOT NULL,
        updated_at              timestamptz NOT NULL
      )`);
    await db.query(`CREATE INDEX webhooks_organization_id ON webhooks (organization_id)`);
    await db.query(`
      CREATE TABLE webhook_deliveries (
        id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        kind             text NOT NULL CHECK (kind IN ('event', 'logout')),
        webhook_id       uuid REFERENCES webhooks (id) ON DELETE CASCADE,
        client_id        text REFERENCES oauth_clients (id) ON DELETE CASCADE,
        target_url       text,
        message_id       text NOT NULL,
        event_type       text,
        payload          text,
        redelivery_of    uuid REFERENCES webhook_deliveries (id) ON DELETE SET NULL,
        attempts         integer NOT NULL DEFAULT 0,
        next_attempt_at  timestamptz NOT NULL,
        claimed_until    timestamptz,
        delivered_at     timestamptz,
        given_up_at      timestamptz,
        last_status      integer,
        last_error       text,
        created_at       timestamptz NOT NULL,
        CHECK ((kind = 'event') = (webhook_id IS NOT NULL)),
        CHECK ((kind = 'logout') = (client_id IS NOT NULL AND target_url IS NOT NULL))
      )`);
    await db.query(`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, message_id) WHERE redelivery_of IS NULL`);
    await db.query(`CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, seq)`);
    await db.query(`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE delivered_at IS NULL AND given_up_at IS NULL`);
    await db.query(`ALTER TABLE oauth_clients ADD COLUMN backchannel_logout_uri text CHECK (length(backchannel_logout_uri) <= 2000)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE oauth_clients DROP COLUMN backchannel_logout_uri`);
    await db.query(`DROP TABLE webhook_deliveries`);
    await db.query(`DROP TABLE webhooks`);
  }
}
