import type { TestApp } from './test-app.js';

/*
 * The device logins as they are stored, for what DeviceApprovalService does not show: it finds
 * only a pending login, for the person deciding it, while tests look at one in any state (its
 * status, scope and its grant's end of admin) and count them. SQL, kept here.
 */

/** A device login's row as stored, without its device code's hash and its sealed answer. */
export interface StoredDeviceLogin {
  id: string;
  user_code: string;
  status: string;
  client_id: string;
  /** The scope asked for. */
  scope: string | null;
  /** Its grant, once approved. */
  grant_id: string | null;
  /** Its grant's end of `admin` (null without a grant). */
  admin_until: Date | null;
  decided_by_user_id: string | null;
  created_at: Date;
  expires_at: Date;
  redeemed_at: Date | null;
}

/** The device logins with this id or user code (as shown, with its dash, or without), or every one; oldest first. */
export function deviceLogins(api: TestApp, filter: { id?: string; userCode?: string } = {}): Promise<StoredDeviceLogin[]> {
  return api.dataSource.query(
    `SELECT d.id, d.user_code, d.status, d.client_id, d.scope, d.grant_id, g.admin_until, d.decided_by_user_id, d.created_at, d.expires_at, d.redeemed_at
       FROM device_logins d LEFT JOIN grants g ON g.id = d.grant_id
      WHERE ($1::uuid IS NULL OR d.id = $1) AND ($2::text IS NULL OR d.user_code = $2)
      ORDER BY d.created_at, d.id`,
    [filter.id ?? null, filter.userCode?.replace('-', '') ?? null],
  );
}
