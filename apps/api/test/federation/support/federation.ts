import { AnonymousRefusals } from '../../../src/federation/anonymous-refusals.js';
import { TokensService } from '../../../src/tokens/tokens.service.js';
import { authEvents, createUser } from '../../support/fixtures.js';
import { type JsonResponse, request } from '../../support/http.js';
import { startAppWithMail } from '../../support/mailing-app.js';
import type { SmtpSink } from '../../support/smtp-sink.js';
import { startTestApp, type TestApp, type TestAppOptions } from '../../support/test-app.js';
import { type BrowserResponse, HttpBrowser } from './http-browser.js';
import { CLIENT_ID, CLIENT_SECRET, TestProvider } from './test-provider.js';

export const PROVIDERS = '/api/admin/identity-providers';

/** The API, a real OpenID provider beside it, and an admin's token for the admin API. */
export interface Federation {
  api: TestApp;
  idp: TestProvider;
  admin: { id: string; email: string };
  adminToken: string;
  /** The admin API, as the admin. */
  call(method: string, path: string, json?: unknown): Promise<JsonResponse>;
  close(): Promise<void>;
}

/**
 * Starts the API and the test provider (its client registered with the redirect URIs of
 * `providerIds` on this API), and configures `acme` (domain acme.test) through the admin API
 * unless told otherwise.
 */
export async function startFederation(options: FederationOptions = {}): Promise<Federation> {
  return federationAround(await startTestApp(options), options);
}

/** startFederation with the API's mail sent to a fresh SMTP sink, which the federation's `close()` stops too. */
export async function startFederationWithMail(options: FederationOptions = {}): Promise<{ fed: Federation; smtp: SmtpSink }> {
  const { api, smtp } = await startAppWithMail(options);
  return { fed: await federationAround(api, options), smtp };
}

type FederationOptions = TestAppOptions & { providerIds?: string[]; configure?: Record<string, unknown> | false };

/** The test provider beside `api`, and `acme` configured on it (startFederation). */
async function federationAround(api: TestApp, options: FederationOptions): Promise<Federation> {
  const idp = await TestProvider.start((options.providerIds ?? ['acme']).map((id) => `${api.baseUrl}/login/sso/${id}/callback`));
  const admin = await createUser(api, { role: 'admin' });
  const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct' })).accessToken;
  const call = (method: string, path: string, json?: unknown): Promise<JsonResponse> => request(api, method, path, { json, token: adminToken });
  if (options.configure !== false) {
    const created = await call('POST', PROVIDERS, { ...acmeProvider(idp), ...options.configure });
    if (created.status !== 201) throw new Error(`could not configure the provider: ${JSON.stringify(created.body)}`);
  }
  return {
    api,
    idp,
    admin,
    adminToken,
    call,
    async close() {
      await idp.close();
      await api.close();
    },
  };
}

/** The body that configures the test provider as `acme` for acme.test, making accounts. */
export const acmeProvider = (idp: TestProvider) => ({
  id: 'acme',
  displayName: 'Acme SSO',
  issuer: idp.issuer,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  emailDomains: ['acme.test'],
  allowSignUp: true,
});

/**
 * A sign-in through a provider in a browser: from `start` (the API's `/login/sso/{id}` or
 * `/sudo/sso/{id}`) to the provider, its sign-in page answered as `username` if it shows one, and
 * back to the redirect URI. Answers the API's answer at the redirect URI (a 303 to where the
 * person goes next, or a refusal's page): the hop after it is not followed. `rewrite` changes any
 * hop before it is followed.
 */
export async function signInThrough(browser: HttpBrowser, api: TestApp, start: string, username: string, rewrite?: (next: URL) => URL): Promise<BrowserResponse> {
  const origin = new URL(api.baseUrl).origin;
  const stop = (next: URL) => next.origin === origin && !/^\/login\/sso\/[^/]+\/callback$/.test(next.pathname);
  let res = await browser.follow(`${api.baseUrl}${start}`, { stop, rewrite });
  if (res.status === 200 && /^\/interaction\/[^/]+$/.test(res.url.pathname)) {
    res = await browser.follow(`${res.url.origin}${res.url.pathname}/login`, { form: { username }, stop, rewrite });
  }
  return res;
}

/**
 * Like signInThrough, but stops before the API hears the provider's answer: the redirect URI with
 * the answer's parameters, for a test to deliver (late, twice, elsewhere, at once with another).
 */
export async function answerFor(browser: HttpBrowser, api: TestApp, start: string, username: string): Promise<URL> {
  const stop = (next: URL) => /^\/login\/sso\/[^/]+\/callback$/.test(next.pathname);
  let res = await browser.follow(`${api.baseUrl}${start}`, { stop });
  if (res.status === 200 && /^\/interaction\/[^/]+$/.test(res.url.pathname)) res = await browser.follow(`${res.url.origin}${res.url.pathname}/login`, { form: { username }, stop });
  if (!res.location || !stop(res.location)) throw new Error(`the provider did not answer: ${res.status} ${res.url} ${res.text.slice(0, 200)}`);
  return res.location;
}

/** Whether `browser` is signed in to the API, and as whom (the tokens page shows the address). */
export async function signedInAs(browser: HttpBrowser, api: TestApp): Promise<string | null> {
  const page = await browser.request(`${api.baseUrl}/settings/tokens`);
  if (page.status !== 200) return null;
  return /<span class="who"> ([^<]+)<\/span>/.exec(page.text)?.[1] ?? null;
}

/** The audit events of a type, oldest first (the refusals counted in memory written first). */
export async function events(api: TestApp, type: string): Promise<Array<{ user_id: string | null; detail: Record<string, unknown> }>> {
  await api.app.get(AnonymousRefusals).flush();
  return (await authEvents(api, { type })).map(({ user_id, detail }) => ({ user_id, detail }));
}
