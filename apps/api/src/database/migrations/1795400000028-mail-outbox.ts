import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The mail outbox (issue #32): a mail is a row, written in the transaction of the change it
 * reports (a link and its mail commit together or not at all), sent by a worker on every
 * replica. A row waits until `next_attempt_at` and while a replica's claim (`claimed_until`)
 * lasts; it ends sent or given up, with the last failure's reason. Its body (`text`, `html`,
 * `link`) may hold a working link, so it is erased when the row ends. Times are the database's:
 * every replica compares them.
 */
export class MailOutbox1795400000028 implements MigrationInterface {
  name = 'MailOutbox1795400000028';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE mail_outbox (
        id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        recipient       text NOT NULL,
        subject         text NOT NULL,
        text            text,
        html            text,
        link            text,
        created_at      timestamptz NOT NULL DEFAULT now(),
        attempts        integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        claimed_until   timestamptz,
        sent_at         timestamptz,
        given_up_at     timestamptz,
        last_error      text,
        CONSTRAINT mail_outbox_one_end CHECK (sent_at IS NULL OR given_up_at IS NULL)
      )`);
    // The worker's claim: the waiting rows, soonest first.
    await db.query(`CREATE INDEX mail_outbox_waiting ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND given_up_at IS NULL`);
    // Retention, and the admin's last given-up mails.
    await db.query(`CREATE INDEX mail_outbox_sent ON mail_outbox (sent_at) WHERE sent_at IS NOT NULL`);
    await db.query(`CREATE INDEX mail_outbox_given_up ON mail_outbox (given_up_at) WHERE given_up_at IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE mail_outbox`);
  }
}
