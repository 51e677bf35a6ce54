import { createHash, randomBytes } from 'node:crypto';
import { withClient } from './test-database.js';

/**
 * Data for an API running in another process (on a cluster of the test's own, behind a proxy or
 * PgBouncer): the app's services are not in this process, so these few arrangements are SQL,
 * kept here in one place. A test with the app in process uses `fixtures.ts` instead.
 */

/** A user and a direct access token for them, valid for a day, straight in the database (the API created the schema); the token. */
export function seedToken(url: string, name: string): Promise<string> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ id: string }>(`INSERT INTO users (email, name) VALUES ($1, $2) RETURNING id`, [
      `${name.toLowerCase()}-${randomBytes(4).toString('hex')}@example.com`,
      name,
    ]);
    const token = `prs_${randomBytes(32).toString('base64url')}`;
    await client.query(
      `INSERT INTO access_tokens (token_hash, user_id, origin, created_at, expires_at) VALUES ($1, $2, 'direct', now(), now() + interval '1 day')`,
      [createHash('sha256').update(token).digest(), rows[0]!.id],
    );
    return token;
  });
}

/** The addresses of the administrators. */
export const adminEmails = (url: string): Promise<string[]> =>
  withClient(url, async (client) => (await client.query<{ email: string }>(`SELECT email FROM users WHERE role = 'admin'`)).rows.map((r) => r.email));

/** How many access tokens carry `label`, revoked ones included. */
export const countTokensLabelled = (url: string, label: string): Promise<number> =>
  withClient(url, async (client) => (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM access_tokens WHERE label = $1`, [label])).rows[0]!.n);

export interface OutboxRow {
  recipient: string;
  attempts: number;
  claimed_until: Date | null;
  sent_at: Date | null;
  given_up_at: Date | null;
  last_error: string | null;
}

/** The mail outbox, oldest first (only `recipient`'s mails when given). */
export const outboxRows = (url: string, recipient?: string): Promise<OutboxRow[]> =>
  withClient(
    url,
    async (client) =>
      (
        await client.query<OutboxRow>(
          `SELECT recipient, attempts, claimed_until, sent_at, given_up_at, last_error FROM mail_outbox ${recipient ? 'WHERE recipient = $1' : ''} ORDER BY created_at`,
          recipient ? [recipient] : [],
        )
      ).rows,
  );

/** `n` people without a password (they may ask for a reset link), straight in the database; their addresses. */
export const seedUsers = (url: string, n: number, name: string): Promise<string[]> =>
  withClient(url, async (client) => {
    const emails = Array.from({ length: n }, () => `${name.toLowerCase().replace(/\W+/g, '-')}-${randomBytes(4).toString('hex')}@example.com`);
    await client.query(`INSERT INTO users (email, name) SELECT e, $2 FROM unnest($1::text[]) AS e`, [emails, name]);
    return emails;
  });

/** How many access tokens the device login of this device code issued (by the code's SHA-256, as it is stored). */
export const accessTokensOfDeviceCode = (url: string, deviceCode: string): Promise<number> =>
  withClient(
    url,
    async (client) =>
      (
        await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM access_tokens t JOIN device_logins d ON d.grant_id = t.grant_id WHERE d.device_code_hash = $1`,
          [createHash('sha256').update(deviceCode).digest()],
        )
      ).rows[0]!.n,
  );

/** How many audit events of these types were recorded. */
export const countEvents = (url: string, types: string[]): Promise<number> =>
  withClient(url, async (client) => (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth_events WHERE type = ANY($1::text[])`, [types])).rows[0]!.n);
