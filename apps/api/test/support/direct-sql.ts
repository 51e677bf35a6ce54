import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Data for an API running in another process (on a cluster of the test's own, behind a proxy or
 * PgBouncer): the app's services are not in this process, so these few arrangements are SQL,
 * kept here in one place. A test with the app in process uses `fixtures.ts` instead.
 */

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

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
