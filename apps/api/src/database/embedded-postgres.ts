import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { lockDataDir } from './data-dir-lock.js';

/**
 * The API's pool size on the embedded database. PGlite is a single backend that
 * runs one statement at a time, so more connections add no throughput; and its
 * socket multiplexer was seen to hang when one connection's transaction
 * interleaved with 50 concurrent statements from others. One connection avoids
 * that entirely. The socket server accepts a few more for tools and listeners.
 */
export const EMBEDDED_POOL_SIZE = 1;

export interface EmbeddedPostgres {
  /** A postgres:// URL for the normal `pg` driver. */
  readonly url: string;
  /** Where the data lives; `memory://` for throwaway test databases. */
  readonly dataDir: string;
  stop(): Promise<void>;
}

/**
 * Postgres without a server: PGlite (Postgres compiled to WASM) served on a
 * loopback port, so TypeORM uses the same driver, migrations and SQL as with a
 * real server. Its socket server multiplexes connections and keeps a
 * transaction on the connection that opened it.
 *
 * @param dataDir a directory (created if missing; data survives restarts) or
 *   `memory://` for a database that lives only as long as the process.
 * @param port 0 picks a free port.
 */
export async function startEmbeddedPostgres(dataDir: string, port = 0): Promise<EmbeddedPostgres> {
  const location = dataDir === 'memory://' ? dataDir : resolve(dataDir);
  let unlock = async () => undefined as void;
  if (location !== 'memory://') {
    await mkdir(location, { recursive: true });
    unlock = await lockDataDir(location);
  }

  let db: PGlite;
  try {
    db = await PGlite.create(location === 'memory://' ? undefined : location);
  } catch (err) {
    await unlock();
    throw err;
  }
  const server = new PGLiteSocketServer({
    db,
    host: '127.0.0.1',
    port,
    maxConnections: EMBEDDED_POOL_SIZE + 3,
  });
  await server.start();

  let stopped = false;
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    dataDir: location,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      // close() flushes PGlite's files; skipping it can leave the data dir locked.
      await db.close();
      await unlock();
    },
  };
}
