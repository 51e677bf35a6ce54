import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from './embedded-postgres.js';

async function query(url: string, sql: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe('startEmbeddedPostgres', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prospect-embedded-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('keeps its data across a restart', async () => {
    const first = await startEmbeddedPostgres(join(dir, 'data'));
    await query(first.url, 'CREATE TABLE notes (body text)');
    await query(first.url, 'INSERT INTO notes VALUES ($1)', ['kept']);
    await first.stop();

    const second = await startEmbeddedPostgres(join(dir, 'data'));
    try {
      expect(await query(second.url, 'SELECT body FROM notes')).toEqual([{ body: 'kept' }]);
    } finally {
      await second.stop();
    }
  });

  it('serves several pooled connections, keeping each transaction to its own', async () => {
    const db = await startEmbeddedPostgres('memory://');
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    try {
      // sql-on-purpose: the embedded server itself is under test, on raw connections
      await pool.query('CREATE TABLE counters (n int)');
      const inTx = await pool.connect();
      // sql-on-purpose: a transaction held open by hand on one connection
      await inTx.query('BEGIN');
      await inTx.query('INSERT INTO counters VALUES (1)');
      // Another connection must not see the uncommitted row, nor land inside that transaction.
      // sql-on-purpose: the same, on a second connection
      const outside = pool.query('SELECT count(*)::int AS c FROM counters');
      await inTx.query('ROLLBACK');
      inTx.release();
      expect((await outside).rows).toEqual([{ c: 0 }]);
      // sql-on-purpose: eight statements at once on the pool
      const parallel = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.query('SELECT $1::int AS i', [i])));
      expect(parallel.map((r) => r.rows[0].i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    } finally {
      await pool.end();
      await db.stop();
    }
  });
});
