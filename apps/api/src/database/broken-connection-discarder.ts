import { type AfterQueryEvent, EventSubscriber, type EntitySubscriberInterface } from 'typeorm';
import { isDatabaseUnavailable } from './database-availability.js';

/**
 * Throws away a connection whose statement failed because the database is unavailable
 * (it timed out, broke or was terminated), instead of using it again.
 *
 * Without this, TypeORM answers a failed statement inside a transaction with a ROLLBACK on
 * the same connection: on a frozen database that ROLLBACK queues behind the statement that
 * just timed out and waits as long again, so the request took twice DATABASE_TIMEOUT_MS.
 * And outside a transaction, TypeORM hands the connection back to the pool as healthy,
 * where the next request would wait behind the same stuck statement. Releasing the query
 * runner with the error makes pg's pool close the connection (destroying its socket when a
 * statement is still in flight); the ROLLBACK then fails at once (TypeORM ignores that and
 * throws the statement's own error, answered 503), and the server rolls the transaction back
 * itself when the connection goes.
 */
@EventSubscriber()
export class BrokenConnectionDiscarder implements EntitySubscriberInterface {
  afterQuery(event: AfterQueryEvent): void {
    if (event.success || !isDatabaseUnavailable(event.error)) return;
    void (event.queryRunner as unknown as ReleasableWithError).releasePostgresConnection(event.error);
  }
}

/**
 * PostgresQueryRunner's release that passes an error on to pg's pool, which then closes the
 * connection instead of reusing it; TypeORM calls it itself when pg reports a broken
 * connection, but declares it private. (`release()` would hand the connection back as healthy.)
 */
interface ReleasableWithError {
  releasePostgresConnection(err?: Error): Promise<void>;
}
