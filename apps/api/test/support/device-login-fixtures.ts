import type { TestApp } from './test-app.js';

/*
 * The device logins as they are stored, for what DeviceApprovalService does not show: it finds
 * only a pending login, for the person deciding it, while tests look at one in any state (its
 * status, scope and end of admin) and count them. SQL, kept here.
 */

/** A device login's row as stored, without its device code's hash and its sealed answer. */
export interface StoredDeviceLogin {
  id: string;
  user_code: string;
  status: string;
  client_id: string;
  grant_type: string;
  scope: string | null;
  admin_until: Date | null;
  decided_by_user_id: string | null;
  created_at: Date;
  expires_at: Date;
  redeemed_at: Date | null;
}

/** The device logins with this id or user code (as shown, with its dash, or without), or every one; oldest first. */
export function deviceLogins(api: TestApp, filter: { id?: string; userCode?: string } = {}): Promise<StoredDeviceLogin[]> {
  return api.dataSource.query(
    `SELECT id, user_code, status, client_id, grant_type, scope, admin_until, decided_by_user_id, created_at, expires_at, redeemed_at
       FROM device_logins WHERE ($1::uuid IS NULL OR id = $1) AND ($2::text IS NULL OR user_code = $2)
      ORDER BY created_at, id`,
    [filter.id ?? null, filter.userCode?.replace('-', '') ?? null],
  );
}
