import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { type BrowserContext, chromium, type Page, type Worker } from 'playwright-core';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { createUser } from '../support/fixtures.js';
import { get, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { SCREENSHOTS } from '../support/browser.js';
import { tokenRequest } from './code-flow-support.js';

const SAMPLE = fileURLToPath(new URL('../../../../examples/browser-extension/', import.meta.url));

/**
 * The sample extension of examples/browser-extension, unmodified but for where Prospect is,
 * loaded into Chromium: its service worker signs in with chrome.identity.launchWebAuthFlow and
 * PKCE (Chromium catches the chromiumapp.org redirect and hands it to the extension), its popup
 * says who is signed in, it refreshes, and it signs out by revoking.
 */
describe('the sample browser extension in Chromium', () => {
  let api: TestApp;
  let context: BrowserContext;
  let worker: Worker;
  let extensionId: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    api = await startTestApp();
    const extension = await mkdtemp(join(tmpdir(), 'prospect-extension-'));
    const profile = await mkdtemp(join(tmpdir(), 'prospect-profile-'));
    dirs.push(extension, profile);
    await cp(SAMPLE, extension, { recursive: true });
    // Where this test's server is: the two places the README says to change.
    const config = join(extension, 'config.js');
    await writeFile(config, (await readFile(config, 'utf8')).replace("'http://localhost:3000'", `'${api.baseUrl}'`));
    const manifest = JSON.parse(await readFile(join(extension, 'manifest.json'), 'utf8'));
    await writeFile(join(extension, 'manifest.json'), JSON.stringify({ ...manifest, host_permissions: [`${api.baseUrl}/*`] }));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', `--disable-extensions-except=${extension}`, `--load-extension=${extension}`],
    });
    worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
    extensionId = new URL(worker.url()).host;
    // What its README says an administrator registers.
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    const registered = await request(api, 'POST', '/api/admin/clients', {
      json: {
        id: 'prospect-extension',
        name: 'Prospect for Chrome',
        allowedScopes: ['openid', 'profile', 'email'],
        redirectUris: [`https://${extensionId}.chromiumapp.org/`],
        allowedOrigins: [`chrome-extension://${extensionId}`],
      },
      token: adminToken,
    });
    expect(registered.status).toBe(201);
  });
  afterAll(async () => {
    await context?.close();
    await api?.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** The extension's own storage, read in its service worker (`chrome` there, not in this process's types). */
  type StoredSession = { accessToken: string; refreshToken: string; expiresAt: number; sub: string };
  const session = () =>
    worker.evaluate(async () => {
      const storage = (globalThis as unknown as { chrome: { storage: { local: { get(key: string): Promise<Record<string, unknown>> } } } }).chrome.storage.local;
      return (await storage.get('prospectSession')).prospectSession as StoredSession | undefined;
    });
  const status = (popup: Page) => popup.locator('#status');
  /** The popup once it has asked the worker (it shows "…" until then). */
  const statusOnceAnswered = async (popup: Page) => {
    await popup.locator('#status', { hasNotText: '…' }).waitFor();
    return status(popup).textContent();
  };

  it('signs in through Prospect’s pages, says who is signed in, refreshes, and signs out by revoking', async () => {
    const person = await createUser(api, { name: 'Katherine Johnson' });
    const popup = await context.newPage();
    await popup.goto(`chrome-extension://${extensionId}/popup.html`);
    await expect(statusOnceAnswered(popup)).resolves.toBe('Not signed in');

    // Sign in: launchWebAuthFlow opens Prospect's authorization endpoint in a window of its own.
    const [auth] = await Promise.all([context.waitForEvent('page'), popup.click('#sign-in')]);
    await auth.waitForURL((url) => url.pathname === '/login');
    await auth.getByLabel('E-mail').fill(person.email);
    await auth.getByLabel('Password').fill('correct horse battery');
    await Promise.all([auth.waitForURL((url) => url.pathname === OAUTH_ROUTES.authorize), auth.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    await expect(auth.textContent('main')).resolves.toContain('Prospect for Chrome wants to sign you in');
    await auth.screenshot({ path: `${SCREENSHOTS}extension-consent.png`, fullPage: true });
    await auth.getByRole('button', { name: 'Approve' }).click();
    await popup.locator('#status', { hasText: /^Signed in as/ }).waitFor();
    await expect(status(popup).textContent()).resolves.toBe(`Signed in as Katherine Johnson (${person.email})`);
    await popup.screenshot({ path: `${SCREENSHOTS}extension-popup.png` });

    const first = (await session())!;
    expect(first.sub).toBe(person.id);
    expect((await get(api, ROUTES.me, first.accessToken)).body.user.id).toBe(person.id);

    // An access token about to expire: the worker refreshes (rotation) before calling Prospect.
    await worker.evaluate(async () => {
      const storage = (globalThis as unknown as { chrome: { storage: { local: { get(key: string): Promise<Record<string, object>>; set(items: object): Promise<void> } } } }).chrome.storage.local;
      const { prospectSession } = await storage.get('prospectSession');
      await storage.set({ prospectSession: { ...prospectSession, expiresAt: Date.now() } });
    });
    await popup.reload();
    await expect(statusOnceAnswered(popup)).resolves.toBe(`Signed in as Katherine Johnson (${person.email})`);
    const renewed = (await session())!;
    expect(renewed.refreshToken).not.toBe(first.refreshToken);
    expect(renewed.accessToken).not.toBe(first.accessToken);

    // Signing out revokes the session on the server, not only here.
    await popup.click('#sign-out');
    await popup.locator('#status', { hasText: /^Not signed in$/ }).waitFor();
    expect(await session()).toBeUndefined();
    expect((await get(api, ROUTES.me, renewed.accessToken)).status).toBe(401);
    const refresh = await tokenRequest(api, { grant_type: 'refresh_token', client_id: 'prospect-extension', refresh_token: renewed.refreshToken });
    expect(refresh.body.error).toBe('invalid_grant');
  });
});
