import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** A service account's row, as the rules read it. */
export interface ServiceAccountRow {
  id: string;
  organizationId: string;
  clientId: string;
  name: string;
  /** Space-separated. */
  scopes: string;
  disabledAt: Date | null;
  createdAt: Date;
}

export interface CredentialUse {
  lastUsedAt: Date | null;
  lastUsedIp: string | null;
}

export interface SecretRow extends CredentialUse {
  id: string;
  createdAt: Date;
  expiresAt: Date | null;
}

export interface KeyRow extends CredentialUse {
  id: string;
  kid: string;
  jwk: Record<string, unknown>;
  createdAt: Date;
}

export interface ServiceAccountListing extends ServiceAccountRow {
  secrets: SecretRow[];
  keys: KeyRow[];
}

const ACCOUNT_COLUMNS = `a.id, a.organization_id AS "organizationId", a.client_id AS "clientId", a.name, a.scopes, a.disabled_at AS "disabledAt", a.created_at AS "createdAt"`;

/** Revives the timestamps json_agg turned into text. */
const asDates = <T extends { createdAt: unknown; lastUsedAt: unknown; expiresAt?: unknown }>(row: T) => ({
  ...row,
  createdAt: new Date(row.createdAt as string),
  lastUsedAt: row.lastUsedAt === null ? null : new Date(row.lastUsedAt as string),
  ...('expiresAt' in row ? { expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt as string) } : {}),
});

/**
 * Every statement on `service_accounts`, `service_account_secrets`, `service_account_keys` and
 * `service_account_assertions` (issue #45). The users row of a service account is users/'s.
 */
@Injectable()
export class ServiceAccountsRepository {
  constructor(private readonly sql: Sql) {}

  async insert(tx: Tx, row: Omit<ServiceAccountRow, 'disabledAt'> & { createdBy: string }): Promise<void> {
    await this.sql.rows(
      `INSERT INTO service_accounts (id, organization_id, client_id, name, scopes, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [row.id, row.organizationId, row.clientId, row.name, row.scopes, row.createdBy, row.createdAt],
      tx,
    );
  }

  /** The organization's service accounts with their credentials (no secret, no hash), by name. */
  async listForOrganization(organizationId: string): Promise<ServiceAccountListing[]> {
    const rows = await this.sql.rows<ServiceAccountRow & { secrets: SecretRow[]; keys: KeyRow[] }>(
      `SELECT ${ACCOUNT_COLUMNS},
              COALESCE((SELECT json_agg(json_build_object('id', s.id, 'createdAt', s.created_at, 'expiresAt', s.expires_at, 'lastUsedAt', s.last_used_at, 'lastUsedIp', s.last_used_ip) ORDER BY s.created_at, s.id)
                          FROM service_account_secrets s WHERE s.service_account_id = a.id), '[]') AS secrets,
              COALESCE((SELECT json_agg(json_build_object('id', k.id, 'kid', k.kid, 'jwk', k.jwk, 'createdAt', k.created_at, 'lastUsedAt', k.last_used_at, 'lastUsedIp', k.last_used_ip) ORDER BY k.created_at, k.id)
                          FROM service_account_keys k WHERE k.service_account_id = a.id), '[]') AS keys
         FROM service_accounts a WHERE a.organization_id = $1 ORDER BY lower(a.name), a.id`,
      [organizationId],
    );
    return rows.map((row) => ({ ...row, secrets: row.secrets.map(asDates) as SecretRow[], keys: row.keys.map(asDates) as KeyRow[] }));
  }

  /** The account of this organization, locked in `tx` against changes (FOR UPDATE); undefined for none. */
  async lockInOrganization(tx: Tx, organizationId: string, id: string): Promise<ServiceAccountRow | undefined> {
    const [row] = await this.sql.rows<ServiceAccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM service_accounts a WHERE a.id = $1 AND a.organization_id = $2 FOR UPDATE`, [id, organizationId], tx);
    return row;
  }

  /**
   * The account that names itself `clientId`, in `tx` under a share lock: a change of it (a
   * disable, new scopes, a deleted credential) waits for the token being issued, then revokes it.
   */
  async shareLockByClientId(tx: Tx, clientId: string): Promise<ServiceAccountRow | undefined> {
    const [row] = await this.sql.rows<ServiceAccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM service_accounts a WHERE a.client_id = $1 FOR SHARE`, [clientId], tx);
    return row;
  }

  async findByClientId(clientId: string): Promise<ServiceAccountRow | undefined> {
    const [row] = await this.sql.rows<ServiceAccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM service_accounts a WHERE a.client_id = $1`, [clientId]);
    return row;
  }

  async update(tx: Tx, id: string, change: { name: string; scopes: string; disabledAt: Date | null }, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE service_accounts SET name = $2, scopes = $3, disabled_at = $4, updated_at = $5 WHERE id = $1`, [id, change.name, change.scopes, change.disabledAt, now], tx);
  }

  /** The ids of the organization's service accounts, locked in `tx` (its deletion ends them). */
  async lockIdsOfOrganization(tx: Tx, organizationId: string): Promise<{ id: string; name: string }[]> {
    return this.sql.rows<{ id: string; name: string }>(`SELECT id, name FROM service_accounts WHERE organization_id = $1 ORDER BY id FOR UPDATE`, [organizationId], tx);
  }

  /** What /me says of a service account: its name and organization. */
  async describe(id: string): Promise<{ name: string; clientId: string; organization: { id: string; slug: string; name: string } } | undefined> {
    const [row] = await this.sql.rows<{ name: string; clientId: string; organizationId: string; slug: string; organizationName: string }>(
      `SELECT a.name, a.client_id AS "clientId", o.id AS "organizationId", o.slug, o.name AS "organizationName" FROM service_accounts a JOIN organizations o ON o.id = a.organization_id WHERE a.id = $1`,
      [id],
    );
    return row && { name: row.name, clientId: row.clientId, organization: { id: row.organizationId, slug: row.slug, name: row.organizationName } };
  }

  async insertSecret(tx: Tx, accountId: string, secretHash: Buffer, now: Date, expiresAt: Date | null): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO service_account_secrets (service_account_id, secret_hash, created_at, expires_at) VALUES ($1, $2, $3, $4) RETURNING id`,
      [accountId, secretHash, now, expiresAt],
      tx,
    );
    return row!.id;
  }

  async deleteSecret(tx: Tx, accountId: string, secretId: string): Promise<boolean> {
    return (await this.sql.count(`DELETE FROM service_account_secrets WHERE id = $1 AND service_account_id = $2`, [secretId, accountId], tx)) > 0;
  }

  /** The account's secret with this hash, share-locked in `tx` (a deletion waits for the token it authenticates). */
  async shareLockSecret(tx: Tx, accountId: string, secretHash: Buffer): Promise<{ id: string; expiresAt: Date | null } | undefined> {
    const [row] = await this.sql.rows<{ id: string; expiresAt: Date | null }>(
      `SELECT id, expires_at AS "expiresAt" FROM service_account_secrets WHERE service_account_id = $1 AND secret_hash = $2 FOR SHARE`,
      [accountId, secretHash],
      tx,
    );
    return row;
  }

  async insertKey(tx: Tx, accountId: string, kid: string, jwk: Record<string, unknown>, now: Date): Promise<string | undefined> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO service_account_keys (service_account_id, kid, jwk, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (service_account_id, kid) DO NOTHING RETURNING id`,
      [accountId, kid, JSON.stringify(jwk), now],
      tx,
    );
    return row?.id;
  }

  async deleteKey(tx: Tx, accountId: string, keyId: string): Promise<{ kid: string } | undefined> {
    const [row] = await this.sql.rows<{ kid: string }>(`DELETE FROM service_account_keys WHERE id = $1 AND service_account_id = $2 RETURNING kid`, [keyId, accountId], tx);
    return row;
  }

  /** The account's keys, share-locked in `tx` (a deletion waits for the token an assertion signed by one authenticates). */
  async shareLockKeys(tx: Tx, accountId: string): Promise<{ id: string; kid: string; jwk: Record<string, unknown> }[]> {
    return this.sql.rows(`SELECT id, kid, jwk FROM service_account_keys WHERE service_account_id = $1 ORDER BY id FOR SHARE`, [accountId], tx);
  }

  /**
   * Records a use of a secret (`table` secrets) or key, in `tx`: its time and address. The address
   * it was last used from before, and whether it was ever used (a first use, or a new address, goes
   * in the organization's log).
   */
  async recordUse(tx: Tx, credential: 'secret' | 'key', id: string, now: Date, ip: string | null): Promise<{ previousIp: string | null; usedBefore: boolean }> {
    const [row] = await this.sql.rows<{ previousIp: string | null; usedBefore: boolean }>(
      credential === 'secret'
        ? `UPDATE service_account_secrets s SET last_used_at = $2, last_used_ip = $3 FROM (SELECT last_used_ip, last_used_at FROM service_account_secrets WHERE id = $1 FOR UPDATE) before
            WHERE s.id = $1 RETURNING before.last_used_ip AS "previousIp", before.last_used_at IS NOT NULL AS "usedBefore"`
        : `UPDATE service_account_keys k SET last_used_at = $2, last_used_ip = $3 FROM (SELECT last_used_ip, last_used_at FROM service_account_keys WHERE id = $1 FOR UPDATE) before
            WHERE k.id = $1 RETURNING before.last_used_ip AS "previousIp", before.last_used_at IS NOT NULL AS "usedBefore"`,
      [id, now, ip],
      tx,
    );
    return row ?? { previousIp: null, usedBefore: true };
  }

  /**
   * Records an assertion's `jti` until its `exp`, in `tx`: true the first time; false when it was
   * accepted before and has not expired (a replay). One statement, so two requests at once with
   * the same assertion cannot both pass.
   */
  async useAssertion(tx: Tx, accountId: string, jti: string, expiresAt: Date, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO service_account_assertions (service_account_id, jti, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (service_account_id, jti) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE service_account_assertions.expires_at <= $4
       RETURNING 1`,
      [accountId, jti, expiresAt, now],
      tx,
    );
    return rows.length > 0;
  }

  /** At most `limit` recorded assertions past their `exp` (they can no longer be replayed); how many. */
  deleteExpiredAssertions(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM service_account_assertions WHERE (service_account_id, jti) IN (SELECT service_account_id, jti FROM service_account_assertions WHERE expires_at < $1 LIMIT $2)`,
      [now, limit],
      tx,
    );
  }
}
