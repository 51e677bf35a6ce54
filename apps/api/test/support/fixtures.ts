import { ROUTES, type DeviceStartResponse } from '@prospect/contract';
import supertest from 'supertest';
import { DeviceApprovalService } from '../../src/device-login/device-approval.service.js';
import type { User } from '../../src/users/user.entity.js';
import { UsersService } from '../../src/users/users.service.js';
import { post, type Target } from './http.js';
import type { TestApp } from './test-app.js';

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

/** Approves as the person who pressed the button on the approval page would. */
export const approve = (api: TestApp, userCode: string, user: { id: string }) =>
  api.app.get(DeviceApprovalService).approve(userCode, user.id, '127.0.0.1');

export const deny = (api: TestApp, userCode: string, user: { id: string }) =>
  api.app.get(DeviceApprovalService).deny(userCode, user.id, '127.0.0.1');

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

/** Signs up on `target` in a cookie-keeping client and approves `userCode` there, as a person in a browser would; returns the e-mail. */
export async function approveInBrowser(target: Target, userCode: string): Promise<string> {
  const browser = supertest.agent(typeof target === 'string' ? target : target.app.getHttpServer());
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
  const email = `browser-${Date.now()}-${counter++}@example.com`;
  const form = await browser.get('/signup').expect(200);
  await browser.post('/signup').type('form').send({ _csrf: csrfOf(form.text), name: 'In a browser', email, password: 'correct horse battery' }).expect(303);
  const page = await browser.get(`/device?user_code=${userCode}`).expect(200);
  await browser.post('/device/approve').type('form').send({ _csrf: csrfOf(page.text), user_code: userCode }).expect(200);
  return email;
}
