import { Injectable } from '@nestjs/common';
import { ClientIdSchema } from '@prospect/contract';
import { Sql } from '../database/sql.js';
import type { OAuthClient } from './oauth-client.entity.js';
import type { Tx } from '../database/tx.js';

const isClientId = (id: string) => ClientIdSchema.safeParse(id).success;

/** A client's columns as the OAuthClient entity names them, its secret's hash left out (selected only where it is checked). */
const CLIENT_COLUMNS = `id, name, allowed_scopes AS "allowedScopes", built_in AS "builtIn", created_by_user_id AS "createdByUserId", created_at AS "createdAt",
  disabled_at AS "disabledAt", type, redirect_uris AS "redirectUris", allowed_origins AS "allowedOrigins", backchannel_logout_uri AS "backchannelLogoutUri"`;

/** Every statement on `oauth_clients` (Sql). */
@Injectable()
export class OAuthClientsRepository {
  constructor(private readonly sql: Sql) {}

  async findById(id: string): Promise<OAuthClient | null> {
    // An id no client can have (a NUL, 2,000 characters…) is no client, without asking Postgres.
    if (!isClientId(id)) return null;
    const [client] = await this.sql.rows<OAuthClient>(`SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1`, [id]);
    return client ?? null;
  }

  /** Built-in first, then by registration. */
  list(): Promise<OAuthClient[]> {
    return this.sql.rows<OAuthClient>(`SELECT ${CLIENT_COLUMNS} FROM oauth_clients ORDER BY built_in DESC, created_at ASC, id ASC`, []);
  }

  /** A confidential client's secret's hash; null for a public (or unknown) client. */
  async secretHashOf(id: string): Promise<Buffer | null> {
    if (!isClientId(id)) return null;
    const [found] = await this.sql.rows<{ secret_hash: Buffer | null }>(`SELECT secret_hash FROM oauth_clients WHERE id = $1`, [id]);
    return found?.secret_hash ?? null;
  }

  /** Whether an enabled client lists `origin` among its allowed origins (a CORS preflight names no client). */
  async anyAllowsOrigin(origin: string): Promise<boolean> {
    const rows = await this.sql.rows(`SELECT 1 FROM oauth_clients WHERE $1 = ANY (allowed_origins) AND disabled_at IS NULL LIMIT 1`, [origin]);
    return rows.length > 0;
  }

  /** A client's name, scopes, redirect URIs and origins, in `tx`. */
  async setBackchannelLogoutUri(tx: Tx, id: string, uri: string | null): Promise<void> {
    await this.sql.rows(`UPDATE oauth_clients SET backchannel_logout_uri = $2 WHERE id = $1`, [id, uri], tx);
  }

  async updateSettings(tx: Tx, id: string, settings: Pick<OAuthClient, 'name' | 'allowedScopes' | 'redirectUris' | 'allowedOrigins'>): Promise<void> {
    await this.sql.rows(
      `UPDATE oauth_clients SET name = $2, allowed_scopes = $3, redirect_uris = $4, allowed_origins = $5 WHERE id = $1`,
      [id, settings.name, settings.allowedScopes, settings.redirectUris, settings.allowedOrigins],
      tx,
    );
  }

  /** Disables (a time) or enables (null) a client, in `tx`. */
  async setDisabledAt(tx: Tx, id: string, disabledAt: Date | null): Promise<void> {
    await this.sql.rows(`UPDATE oauth_clients SET disabled_at = $2 WHERE id = $1`, [id, disabledAt], tx);
  }

  /** A confidential client's new secret's hash, in `tx`. */
  async setSecretHash(tx: Tx, id: string, secretHash: Buffer): Promise<void> {
    await this.sql.rows(`UPDATE oauth_clients SET secret_hash = $2 WHERE id = $1`, [id, secretHash], tx);
  }

  /** The client, locked for the rest of `tx` (a change is decided on what it is now). */
  async lockedById(tx: Tx, id: string): Promise<OAuthClient | null> {
    if (!isClientId(id)) return null;
    const [client] = await this.sql.rows<OAuthClient>(`SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1 FOR UPDATE`, [id], tx);
    return client ?? null;
  }

  /**
   * The client, share-locked for the rest of `tx`: an exchange of its code holds this while it
   * makes a grant, so a disable (which locks it for update) either waits and then revokes that
   * grant, or comes first and the exchange finds it disabled.
   */
  async sharedById(tx: Tx, id: string): Promise<OAuthClient | null> {
    if (!isClientId(id)) return null;
    const [client] = await this.sql.rows<OAuthClient>(`SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1 FOR SHARE`, [id], tx);
    return client ?? null;
  }

  async delete(tx: Tx, id: string): Promise<void> {
    await this.sql.rows(`DELETE FROM oauth_clients WHERE id = $1`, [id], tx);
  }

  /** Insert, not upsert: a client with the same id is a unique violation, never overwritten. */
  async insert(tx: Tx, client: OAuthClient): Promise<void> {
    await this.sql.rows(
      `INSERT INTO oauth_clients (id, name, allowed_scopes, built_in, created_by_user_id, created_at, disabled_at, type, secret_hash, redirect_uris, allowed_origins)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [client.id, client.name, client.allowedScopes, client.builtIn, client.createdByUserId, client.createdAt, client.disabledAt, client.type, client.secretHash ?? null, client.redirectUris, client.allowedOrigins],
      tx,
    );
  }
}
