import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import { ServerSecretsRepository } from './server-secrets.repository.js';

/**
 * Keys the server makes for itself (the session cookie's, the device cookie's): made by the
 * first instance that needs one and kept in `server_secrets`, so every replica uses the same
 * key without configuration, and a restart keeps what was signed or sealed with it valid.
 */
@Injectable()
export class ServerSecrets {
  constructor(private readonly secrets: ServerSecretsRepository) {}

  /** Outside Nest, for a one-off command (main.js setup-code). */
  static over(sql: Sql): ServerSecrets {
    return new ServerSecrets(new ServerSecretsRepository(sql));
  }

  /** The secret called `name`, made now if no instance made it before (one statement, so two racing instances agree). */
  get(name: string): Promise<string> {
    return this.secrets.getOrCreate(name, randomBytes(32).toString('base64url'));
  }

  // A secret that exists only while the deployment has no administrator (the admin setup code).

  /** Stores `value` under `name` unless one is there already or an admin exists; whether it did. */
  createUnlessPresentOrAdmin(name: string, value: string): Promise<boolean> {
    return this.secrets.createUnlessPresentOrAdmin(name, value);
  }

  /** When `name` was stored, if it is and no admin exists. */
  createdAtUnlessAdmin(name: string): Promise<Date | undefined> {
    return this.secrets.createdAtUnlessAdmin(name);
  }

  /** Stores (or replaces) `value` under `name` unless an admin exists; whether it did. */
  putUnlessAdminExists(name: string, value: string): Promise<boolean> {
    return this.secrets.putUnlessAdminExists(name, value);
  }

  /** Deletes `name` if it holds `value` and no admin exists, in the caller's transaction; whether it did. */
  takeUnlessAdminExists(tx: Tx, name: string, value: string): Promise<boolean> {
    return this.secrets.takeUnlessAdminExists(tx, name, value);
  }

  delete(name: string): Promise<void> {
    return this.secrets.delete(name);
  }
}
