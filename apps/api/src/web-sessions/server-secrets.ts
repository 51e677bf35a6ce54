import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';

/**
 * Keys the server makes for itself (the session cookie's, the device cookie's): made by the
 * first instance that needs one and kept in `server_secrets`, so every replica uses the same
 * key without configuration, and a restart keeps what was signed or sealed with it valid.
 */
@Injectable()
export class ServerSecrets {
  constructor(private readonly sql: Sql) {}

  /** The secret called `name`, made now if no instance made it before (one statement, so two racing instances agree). */
  async get(name: string): Promise<string> {
    const [row] = await this.sql.rows<{ value: string }>(
      `INSERT INTO server_secrets (name, value) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET name = server_secrets.name RETURNING value`,
      [name, randomBytes(32).toString('base64url')],
    );
    return row!.value;
  }
}
