import type { TestApp } from './test-app.js';

/** Whether a server secret called `name` is stored: SQL, as ServerSecrets makes one whenever it is asked for one, so it cannot tell. */
export async function hasServerSecret(api: TestApp, name: string): Promise<boolean> {
  return (await api.dataSource.query(`SELECT 1 FROM server_secrets WHERE name = $1`, [name])).length > 0;
}

/*
 * The grants as they are stored (grants/ shows no list of them): a test looks at how one was
 * obtained, for whom and with what proof. SQL, kept here.
 */

/** A grant's row as stored. */
export interface StoredGrant {
  id: string;
  user_id: string;
  client_id: string;
  grant_type: string;
  scope: string;
  admin_until: Date | null;
  credential_epoch: number | null;
  amr: string[] | null;
  auth_time: Date | null;
  second_factor: boolean;
  web_session: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** The grants with this id, or of this person, or every one; oldest first. */
export function grants(api: TestApp, filter: { id?: string; userId?: string } = {}): Promise<StoredGrant[]> {
  return api.dataSource.query(
    `SELECT id, user_id, client_id, grant_type, scope, admin_until, credential_epoch, amr, auth_time, second_factor, web_session, created_at, revoked_at
       FROM grants WHERE ($1::uuid IS NULL OR id = $1) AND ($2::uuid IS NULL OR user_id = $2)
      ORDER BY created_at, id`,
    [filter.id ?? null, filter.userId ?? null],
  );
}
