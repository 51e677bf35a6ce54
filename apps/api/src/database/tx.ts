import type { EntityManager } from 'typeorm';

declare const opaque: unique symbol;

/**
 * A unit of work under way (one database transaction), as the rest of the code passes it on: to
 * a repository, to another module's service, to the audit log. Opaque on purpose: nothing outside
 * database/ can reach the TypeORM EntityManager behind it, so a service decides *what* belongs in
 * one transaction (UnitOfWork.run) and the repositories alone decide *how* it is written (Sql).
 */
export interface Tx {
  readonly [opaque]: 'Tx';
}

/** What a Tx holds; lives only in database/ (UnitOfWork makes it, Sql unwraps it). */
class TxHandle {
  /** Run once the transaction committed (never after a rollback). */
  readonly afterCommit: Array<() => void> = [];

  constructor(readonly manager: EntityManager) {}
}

/** The Tx for a transaction's manager (UnitOfWork). Not for use outside database/. */
export function wrapTx(manager: EntityManager): Tx {
  return new TxHandle(manager) as unknown as Tx;
}

/** What is behind a Tx: for database/ only (Sql and UnitOfWork). */
export function unwrapTx(tx: Tx): TxHandle {
  if (!(tx instanceof TxHandle)) throw new TypeError('not a transaction of UnitOfWork.run');
  return tx;
}
