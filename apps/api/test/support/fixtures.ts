import { createHash } from 'node:crypto';
import { ROUTES, type DeviceStartResponse, type Scope } from '@prospect/contract';
import { DeviceApprovalService } from '../../src/device-login/device-approval.service.js';
import { OAuthClientsService } from '../../src/oauth/oauth-clients.service.js';
import type { User } from '../../src/users/user.entity.js';
import { UsersService } from '../../src/users/users.service.js';
import { post, type Target } from './http.js';
import type { TestApp } from './test-app.js';
import { csrfFrom, signUp, webClient } from './web-client.js';

let counter = 0;

/** A person with a password and (unless told otherwise) a verified address, created through the service (as sign-up does). */
export async function createUser(api: TestApp, overrides: Partial<{ email: string; name: string; role: User['role']; emailVerified: boolean }> = {}) {
  counter += 1;
  return api.app.get(UsersService).create({
    email: overrides.email ?? `person${counter}-${Date.now()}@example.com`,
    name: overrides.name ?? `Person ${counter}`,
    password: 'correct horse battery',
    role: overrides.role,
    emailVerified: overrides.emailVerified ?? true,
  });
}

export async function startDeviceLogin(api: Target, body: object = { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' }) {
  const res = await post<DeviceStartResponse>(api, ROUTES.deviceStart, body);
  expect(res.status).toBe(200);
  return res.body;
}

export const poll = (api: Target, deviceCode: string) => post(api, ROUTES.devicePoll, { deviceCode });

/** What the approval page shows `user` for the code they typed (the try counted, as the page counts it). */
export const approvalPage = (api: TestApp, userCode: string, user: { id: string }) =>
  api.app.get(DeviceApprovalService).findFor({ userId: user.id, ip: '127.0.0.1' }, userCode);

/** The person at the approval page, signed in with a password under their account's credential epoch now. */
const approverNow = async (api: TestApp, user: { id: string }) => ({
  userId: user.id,
  ip: '127.0.0.1',
  credentialEpoch: (await api.app.get(UsersService).findById(user.id))?.credentialEpoch ?? 0,
  amr: ['pwd'],
  secondFactor: false,
});

/** Approves as the person who pressed the button on the approval page would. */
export const approve = async (api: TestApp, userCode: string, user: { id: string }) =>
  api.app.get(DeviceApprovalService).decideFor(await approverNow(api, user), userCode, 'approve');

export const deny = async (api: TestApp, userCode: string, user: { id: string }) =>
  api.app.get(DeviceApprovalService).decideFor(await approverNow(api, user), userCode, 'deny');

/** A full device login: start, approve as `user`, poll; returns the authorized poll's response. */
export async function authorizedPoll(api: TestApp, user: { id: string }) {
  const start = await startDeviceLogin(api);
  await approve(api, start.userCode, user);
  const res = await poll(api, start.deviceCode);
  expect(res.body.status).toBe('authorized');
  return res;
}

/** A full device login; returns the issued token. */
export async function deviceLoginToken(api: TestApp, user: { id: string }): Promise<string> {
  return (await authorizedPoll(api, user)).body.accessToken;
}

/** A person signed up in a cookie-keeping client on `target`, on the approval page of `userCode`; the client, the e-mail and the page's form fields. */
export async function onApprovalPage(target: Target, userCode: string, name = 'In a browser') {
  const web = webClient(target);
  const email = `browser-${Date.now()}-${counter++}@example.com`;
  const signedUp = await signUp(web, { name, email, password: 'correct horse battery' });
  expect(signedUp.status).toBe(303);
  const page = await web.send('GET', `/device?user_code=${userCode}`);
  expect(page.status).toBe(200);
  return { web, email, fields: { _csrf: csrfFrom(page.text), user_code: userCode } };
}

/** Signs up on `target` in a cookie-keeping client and approves `userCode` there, as a person in a browser would; returns the e-mail. */
export async function approveInBrowser(target: Target, userCode: string): Promise<string> {
  const { web, email, fields } = await onApprovalPage(target, userCode);
  expect((await web.send('POST', '/device/approve', fields)).status).toBe(200);
  return email;
}

/** A person's row as the app reads it (UsersService), or null once deleted. */
export const userById = (api: TestApp, id: string) => api.app.get(UsersService).findById(id);
export const userByEmail = (api: TestApp, email: string) => api.app.get(UsersService).findByEmail(email);
/** Whether the account has a password (the hash itself is never selected). */
export const hasPassword = (api: TestApp, id: string) => api.app.get(UsersService).hasPassword(id);

/** An OAuth client registered by an administrator (one made for it), as POST /api/admin/clients does; the existing one if `id` is taken. */
export async function registerClient(api: TestApp, input: { id: string; name: string; allowedScopes?: Scope[]; redirectUris?: string[] }) {
  const clients = api.app.get(OAuthClientsService);
  const existing = await clients.find(input.id);
  if (existing) return existing;
  const admin = await createUser(api, { role: 'admin' });
  return (await clients.register({ allowedScopes: ['profile'], ...input }, admin.id, null)).client;
}

/*
 * The ones below are SQL, kept in this one place for the specs that share them: the app has no
 * way to forget every limiter counter at once, nor to let one window pass before its time (the
 * limiter keeps its own clock; a test's shortcut, not a rule of the app), and audit/ reads the
 * trail only as one person's security log, while tests look events up by type and detail.
 */

/** Forgets every rate-limit counter: each test then starts as a first visit (every client is 127.0.0.1). */
export async function forgetRateLimits(api: TestApp): Promise<void> {
  await api.dataSource.query(`DELETE FROM rate_limits`);
}

/** Lets the window of one limiter's counter for `subject` pass (its key is the limit's name and the subject's SHA-256, as RateLimits keys it). */
export async function expireRateLimit(api: TestApp, limit: string, subject: string): Promise<void> {
  await api.dataSource.query(`UPDATE rate_limits SET expire = 0 WHERE key = $1`, [`${limit}:${createHash('sha256').update(subject).digest('base64url')}`]);
}

export interface AuditTrailRow {
  id: number;
  type: string;
  user_id: string | null;
  ip: string | null;
  detail: Record<string, any>;
}

/** The audit events of `type` (or of every type starting with `typePrefix`, a LIKE pattern), of `userId` and with these `detail` fields, oldest first. */
export async function authEvents(api: TestApp, filter: { type?: string; typePrefix?: string; userId?: string; detail?: Record<string, string> }): Promise<AuditTrailRow[]> {
  const detail = filter.detail && Object.keys(filter.detail).length ? JSON.stringify(filter.detail) : null;
  return api.dataSource.query(
    `SELECT id::int AS id, type, user_id, ip, detail FROM auth_events
      WHERE ($1::text IS NULL OR type = $1) AND ($2::text IS NULL OR type LIKE $2 || '%') AND ($3::uuid IS NULL OR user_id = $3)
        AND ($4::jsonb IS NULL OR detail @> $4::jsonb)
      ORDER BY id`,
    [filter.type ?? null, filter.typePrefix ?? null, filter.userId ?? null, detail],
  );
}

export const countAuthEvents = async (api: TestApp, filter: Parameters<typeof authEvents>[1]) => (await authEvents(api, filter)).length;
