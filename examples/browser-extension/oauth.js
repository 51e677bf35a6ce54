// The extension's sign-in: OAuth 2.1's authorization code flow with PKCE (S256) through
// chrome.identity.launchWebAuthFlow, as every extension that signs in to a service does it.
// No library: fetch, Web Crypto and chrome.identity are all it needs.
import { CLIENT_ID, PROSPECT_URL, SCOPE } from './config.js';

const api = globalThis.browser ?? globalThis.chrome;

/** The tokens live in the browser's local extension storage, which no web page can read. */
const STORE = 'prospectSession';

const base64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const randomString = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** The server's endpoints (OpenID Connect Discovery), read once per service-worker life. */
let discovered;
export function discover() {
  discovered ??= fetch(`${PROSPECT_URL}/.well-known/openid-configuration`).then(async (res) => {
    if (!res.ok) throw new Error(`Prospect's discovery document answered ${res.status}`);
    const metadata = await res.json();
    if (metadata.issuer !== PROSPECT_URL) throw new Error(`Prospect says its issuer is ${metadata.issuer}, not ${PROSPECT_URL}`);
    return metadata;
  });
  discovered.catch(() => (discovered = undefined));
  return discovered;
}

/** A form POST to one of the token endpoints; the answer's JSON, or an Error with the server's words. */
async function postForm(url, params) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params) });
  const body = res.headers.get('content-type')?.includes('json') ? await res.json() : {};
  if (!res.ok) throw Object.assign(new Error(body.error_description ?? `HTTP ${res.status}`), { code: body.error, status: res.status });
  return body;
}

/** The claims of a JWT, unverified: the ID token came straight from the token endpoint over TLS (OpenID Connect Core §3.1.3.7). */
function claimsOf(jwt) {
  const payload = atob(jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(payload, (c) => c.charCodeAt(0))));
}

/**
 * Signs in: opens Prospect's authorization endpoint in a window of the browser's own, where the
 * person signs in (with their second factor) and approves this extension once; Prospect sends the
 * window to https://<extension-id>.chromiumapp.org/ with a code, which the browser hands back here
 * instead of loading it. The code is exchanged with the PKCE verifier only this worker holds.
 * @param interactive false: only if Prospect can answer without showing anything (prompt=none).
 */
export async function signIn({ interactive = true } = {}) {
  const metadata = await discover();
  const verifier = randomString();
  const state = randomString();
  const nonce = randomString();
  const redirectUri = api.identity.getRedirectURL();
  const url = new URL(metadata.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectUri,
    scope: SCOPE,
    state,
    nonce,
    code_challenge: base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))),
    code_challenge_method: 'S256',
    ...(interactive ? {} : { prompt: 'none' }),
  }).toString();
  const answered = new URL(await api.identity.launchWebAuthFlow({ url: url.href, interactive }));
  const answer = Object.fromEntries(answered.searchParams);
  // RFC 9207: the answer names who sent it; state ties it to this request.
  if (answer.iss !== metadata.issuer) throw new Error('The sign-in answer did not come from Prospect.');
  if (answer.state !== state) throw new Error('The sign-in answer was for another request.');
  if (answer.error) throw Object.assign(new Error(answer.error_description ?? answer.error), { code: answer.error });
  const tokens = await postForm(metadata.token_endpoint, { grant_type: 'authorization_code', client_id: CLIENT_ID, code: answer.code, redirect_uri: redirectUri, code_verifier: verifier });
  const claims = claimsOf(tokens.id_token);
  if (claims.iss !== metadata.issuer || claims.aud !== CLIENT_ID || claims.nonce !== nonce) throw new Error('The ID token is not for this sign-in.');
  await save(tokens, claims);
  return claims;
}

async function save(tokens, claims) {
  const previous = (await api.storage.local.get(STORE))[STORE];
  await api.storage.local.set({
    [STORE]: {
      accessToken: tokens.access_token,
      // Each refresh token is used once: the answer brings the next one.
      refreshToken: tokens.refresh_token,
      expiresAt: Date.now() + tokens.expires_in * 1000,
      sub: claims?.sub ?? previous?.sub,
      email: claims?.email ?? previous?.email,
    },
  });
}

/** The session, its access token renewed first when it has (nearly) expired; undefined when signed out. */
async function session() {
  const current = (await api.storage.local.get(STORE))[STORE];
  if (!current || current.expiresAt - Date.now() > 60_000) return current;
  const metadata = await discover();
  try {
    await save(await postForm(metadata.token_endpoint, { grant_type: 'refresh_token', client_id: CLIENT_ID, refresh_token: current.refreshToken }));
  } catch (err) {
    // Revoked, expired, or used elsewhere (which ends the session): signed out.
    if (err.code === 'invalid_grant') await api.storage.local.remove(STORE);
    throw err;
  }
  return (await api.storage.local.get(STORE))[STORE];
}

/** Who is signed in, as Prospect says it (the same person the CLI's `prospect auth:whoami` names); undefined when signed out. */
export async function whoAmI() {
  const current = await session();
  if (!current) return undefined;
  const res = await fetch(`${PROSPECT_URL}/api/cli/auth/me`, { headers: { authorization: `Bearer ${current.accessToken}` } });
  if (res.status === 401) {
    await api.storage.local.remove(STORE);
    return undefined;
  }
  if (!res.ok) throw new Error(`Prospect answered ${res.status}`);
  return (await res.json()).user;
}

/** Signs out: the refresh token revoked (RFC 7009), which ends its whole session on the server, then forgotten here. */
export async function signOut() {
  const current = (await api.storage.local.get(STORE))[STORE];
  await api.storage.local.remove(STORE);
  if (!current) return;
  const metadata = await discover();
  await postForm(metadata.revocation_endpoint, { token: current.refreshToken, token_type_hint: 'refresh_token', client_id: CLIENT_ID });
}
