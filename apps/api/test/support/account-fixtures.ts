import { UsersService } from '../../src/users/users.service.js';
import { scryptHash } from './legacy-password.js';
import type { TestApp } from './test-app.js';

/** Every account, as the admin list reads it (UsersService.listForAdmin), on one page larger than any test's database. */
export const everyAccount = async (api: TestApp) => (await api.app.get(UsersService).listForAdmin('', 100_000, 0)).rows;

/** Gives the account `password` hashed by the previous scheme (scrypt), as accounts from before argon2id have it; stored as a change of password is. */
export async function giveLegacyPassword(api: TestApp, userId: string, password: string): Promise<void> {
  await api.app.get(UsersService).changeWithAudit(userId, { passwordHash: await scryptHash(password) }, 'password.change', null);
}

/*
 * SQL below: accounts/ answers questions about one person's credentials as the pages ask them
 * (has an app, unused codes, their passkeys), while these tests count every row, used or not,
 * or every person's.
 */

const count = async (api: TestApp, sql: string, params: unknown[] = []): Promise<number> => (await api.dataSource.query(sql, params))[0].n;

/** How many recovery codes the person has, used ones too. */
export const countRecoveryCodes = (api: TestApp, userId: string) => count(api, `SELECT count(*)::int AS n FROM recovery_codes WHERE user_id = $1`, [userId]);

/** How many passkeys are registered, of anyone. */
export const countPasskeys = (api: TestApp) => count(api, `SELECT count(*)::int AS n FROM passkeys`);

/** How many mailed links (reset, verification, invitation, address change) the person has, used or not. */
export const countAccountTokensOf = (api: TestApp, userId: string) => count(api, `SELECT count(*)::int AS n FROM account_tokens WHERE user_id = $1`, [userId]);
