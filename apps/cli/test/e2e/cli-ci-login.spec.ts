/**
 * The CLI in CI (issue #45, item 5): `prospect auth:login --service-account <clientId>
 * --federated-token <file|-|github>` against the real API, with a real OIDC issuer in the test
 * (discovery, a JWKS, tokens signed with jose) trusted by a service account's federation, and a
 * stand-in for GitHub Actions' token service (outside the system) that mints the issuer's tokens.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from '../../../api/test/support/http.js';
import { TestIssuer } from '../../../api/test/support/test-issuer.js';
import { createServiceAccount, organizationWithOwner } from '../../../api/test/service-accounts/support.js';
import { api, box, useRealApi } from '../support/e2e-suite.js';
import { PROSPECT_JS } from '../support/run-cli.js';
import { Tmux } from '../support/tmux.js';

// The test issuer listens on 127.0.0.1: a loopback issuer is trusted only with this (production's default refuses it).
useRealApi('ci-login', { TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS: 'true' });

const issuer = new TestIssuer();

/**
 * GitHub Actions' token service as a job sees it: `ACTIONS_ID_TOKEN_REQUEST_URL` with `audience`
 * added, its request token as a bearer, `{value}` back: the issuer's token for that audience.
 */
const github = {
  server: undefined as Server | undefined,
  url: '',
  asked: [] as IncomingMessage[],
  claims: { sub: 'repo:acme/api:ref:refs/heads/main' } as Record<string, unknown>,
  env() {
    return { ACTIONS_ID_TOKEN_REQUEST_URL: `${this.url}/token?api-version=2.0`, ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'gh-request-token' };
  },
};

beforeAll(async () => {
  await issuer.start();
  await issuer.addKey('k1');
  github.server = createServer(async (req, res) => {
    github.asked.push(req);
    if (req.headers.authorization !== 'bearer gh-request-token') return void res.writeHead(401).end('{"message":"Bad credentials"}');
    const audience = new URL(req.url!, github.url).searchParams.get('audience')!;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value: await issuer.sign({ ...github.claims, aud: audience }) }));
  });
  await new Promise<void>((resolve) => github.server!.listen(0, '127.0.0.1', resolve));
  github.url = `http://127.0.0.1:${(github.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => github.server?.close(resolve));
  await issuer.close();
});
beforeEach(() => {
  github.asked.length = 0;
  github.claims = { sub: 'repo:acme/api:ref:refs/heads/main' };
});

/** A service account whose federation trusts the test issuer for acme/api on main, with this service as the audience (the default). */
async function federatedAccount(scopes: Array<'profile' | 'orgs'> = ['profile', 'orgs']) {
  const { owner, slug } = await organizationWithOwner(api);
  const account = await createServiceAccount(api, slug, owner.token, scopes);
  const res = await request(api, 'POST', `/api/orgs/${slug}/service-accounts/${account.id}/federations`, {
    json: { issuer: issuer.url, conditions: { sub: 'repo:acme/api:ref:refs/heads/main', repository: 'acme/api' } },
    token: owner.token,
  });
  expect(res.status).toBe(201);
  const orgName = ((await request(api, 'GET', `/api/orgs/${slug}`, { token: owner.token })).body as { name: string }).name;
  return { slug, owner, orgName, account, audience: (res.body as { audience: string }).audience };
}

const ciToken = (audience: string, claims: Record<string, unknown> = {}) => issuer.sign({ sub: 'repo:acme/api:ref:refs/heads/main', aud: audience, ...claims });
const login = (clientId: string, ...more: string[]) => ['auth:login', '--api-url', api.baseUrl, '--service-account', clientId, ...more];

describe('auth:login --service-account --federated-token', () => {
  it('-: exchanges the token from stdin, keeps it as the session, and every command then acts as the service account', async () => {
    const { slug, orgName, account, audience } = await federatedAccount();
    const run = await box.run(login(account.clientId, '--federated-token', '-'), { stdin: `${await ciToken(audience)}\n` });
    expect(run.stderr).toMatch(/^Session saved to .*auth-session\.json \(expires in (\d+ minutes|1 hour), not renewed: run the exchange again then\)\.\n$/);
    expect(run.stdout).toBe(`Logged in as service account nightly sync of ${orgName} (${slug}) on ${api.baseUrl}.\n`);
    expect(run.code).toBe(0);
    const saved = await box.readSession();
    expect(saved).toEqual({
      accessToken: expect.stringMatching(/^prs_/),
      apiBaseUrl: api.baseUrl,
      user: { id: account.id, email: null, name: 'nightly sync' },
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
      serviceAccount: { clientId: account.clientId, organization: { id: expect.any(String), slug, name: orgName } },
    });

    const whoami = await box.run(['auth:whoami', '--verify']);
    expect(whoami.stdout).toMatch(new RegExp(`^Service account nightly sync of ${orgName} \\(${slug}\\), on ${api.baseUrl} \\(verified\\)\nToken expires .*; not renewed: run the exchange again then\n$`));
    const json = JSON.parse((await box.run(['auth:whoami', '--verify', '--json'])).stdout);
    expect(json).toMatchObject({ user: { id: account.id, email: null, name: 'nightly sync' }, kind: 'service_account', clientId: account.clientId, organization: { slug }, verified: true, refreshable: false });
    const me = await box.run(['api', '/api/cli/auth/me']);
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ kind: 'service_account', user: { id: account.id, email: null } });
    expect((await box.run(['auth:status'])).stdout).toContain(`User:         Service account nightly sync of ${orgName} (${slug})`);
    // No person approves a machine's scopes: auth:refresh says to ask at the exchange.
    const refresh = await box.run(['auth:refresh', '--scopes', 'profile']);
    expect(refresh.stderr).toMatch(new RegExp(`^Error: This session is the service account ${account.clientId}'s, whose scopes are asked for at the exchange: `));
    expect(refresh.code).toBe(2);
  });

  it('a file, with --no-store: the token alone on stdout for PROSPECT_TOKEN, and nothing on disk', async () => {
    const { account, audience } = await federatedAccount(['profile']);
    const file = join(box.configDir, '..', 'ci-token');
    await writeFile(file, await ciToken(audience));
    const run = await box.run(login(account.clientId, '--federated-token', file, '--no-store'));
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^prs_[\w-]+\n$/);
    expect(run.stderr).toMatch(/^Exchanged the CI token for a token of psa_\S+ on \S+; it lasts (\d+ minutes|1 hour), and nothing was saved\.\n$/);
    expect(box.hasSession()).toBe(false);
    const whoami = await box.run(['auth:whoami'], { env: { PROSPECT_TOKEN: run.stdout.trim(), PROSPECT_API_BASE_URL: api.baseUrl } });
    expect(whoami.stdout).toMatch(/^Service account nightly sync of /);
    // The CI token's jti is spent: the same file exchanged again is refused.
    const again = await box.run(login(account.clientId, '--federated-token', file, '--no-store'));
    expect(again.code).toBe(4);
    expect(again.stdout).toBe('');
  });

  it('--no-store at a terminal: refuses before the CI token is spent, and says how to capture it', async () => {
    const { account, audience } = await federatedAccount(['profile']);
    const file = join(box.configDir, '..', 'ci-token');
    await writeFile(file, await ciToken(audience));
    const terminal = new Tmux();
    try {
      const prospect = `env -u CI PROSPECT_CONFIG_DIR='${box.configDir}' '${process.execPath}' '${PROSPECT_JS}'`;
      terminal.run('new-session', '-d', '-s', 'nostore', '-x', '200', '-y', '20', `${prospect} ${login(account.clientId, '--federated-token', file, '--no-store').join(' ')}; echo "exit=$?"; sleep 60`);
      const [shown] = await terminal.waitForScreen(/exit=\d+/, 'nostore');
      expect(shown.trimEnd()).toBe(
        [
          'Error: --no-store writes the token to stdout, which is a terminal here: capture it instead.',
          `For example: export PROSPECT_TOKEN=$(prospect auth:login --service-account ${account.clientId} --federated-token … --no-store)`,
          'exit=2',
        ].join('\n'),
      );
    } finally {
      terminal.kill();
    }
    expect(box.hasSession()).toBe(false);
    // Nothing was exchanged: the same CI token, captured as told, still works.
    const captured = await box.run(login(account.clientId, '--federated-token', file, '--no-store'));
    expect(captured.stdout).toMatch(/^prs_[\w-]+\n$/);
    expect(captured.code).toBe(0);
  });

  it('--scopes: a token without profile, which /me may not answer, is kept under its client ID', async () => {
    const { account, audience } = await federatedAccount(['profile', 'orgs']);
    const run = await box.run(login(account.clientId, '--federated-token', '-', '--scopes', 'orgs'), { stdin: await ciToken(audience) });
    expect(run.stdout).toBe(`Logged in as service account ${account.clientId} on ${api.baseUrl}.\n`);
    expect(run.code).toBe(0);
    expect(await box.readSession()).toMatchObject({ user: { id: account.clientId, email: null, name: account.clientId }, serviceAccount: { clientId: account.clientId } });
    expect((await box.run(['auth:whoami'])).stdout).toMatch(new RegExp(`^Service account ${account.clientId}, on ${api.baseUrl}\n`));
    const refused = await box.run(login(account.clientId, '--federated-token', '-', '--scopes', 'admin'), { stdin: await ciToken(audience) });
    expect(refused.stderr).toBe('Error: --scopes takes a comma-separated list of profile, orgs; got unknown scope "admin".\nFor example: --scopes profile,orgs\n');
    expect(refused.code).toBe(2);
  });

  it('github: asks GitHub Actions for a token with the service’s issuer as audience (or --audience), with the job’s request token', async () => {
    const { slug, orgName, account } = await federatedAccount();
    const run = await box.run(login(account.clientId, '--federated-token', 'github'), { env: github.env() });
    expect(run.stderr).toMatch(/^Session saved to /);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`Logged in as service account nightly sync of ${orgName} (${slug}) on ${api.baseUrl}.\n`);
    expect(github.asked).toHaveLength(1);
    const discovered = (await request(api, 'GET', '/.well-known/openid-configuration')).body.issuer;
    expect(new URL(github.asked[0]!.url!, github.url).searchParams.get('audience')).toBe(discovered);

    // Another audience than the federation's: minted as asked, refused by the server, in one line.
    const other = await box.run(login(account.clientId, '--federated-token', 'github', '--audience', 'https://elsewhere.example'), { env: github.env() });
    expect(new URL(github.asked[1]!.url!, github.url).searchParams.get('audience')).toBe('https://elsewhere.example');
    expect(other.stderr).toBe(`Error: ${api.baseUrl} refused the token exchange (invalid_grant): The subject_token is not accepted for this service account. Nothing was saved.\n`);
    expect(other.code).toBe(4);
  });

  it('a token outside the federation’s conditions is refused in one line, and the session in place stays', async () => {
    const { account, audience } = await federatedAccount();
    expect((await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) })).code).toBe(0);
    const before = await box.readSession();
    const run = await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience, { sub: 'repo:evil/fork:ref:refs/heads/main', repository: 'evil/fork' }) });
    expect(run.stderr).toBe(`Error: ${api.baseUrl} refused the token exchange (invalid_grant): The subject_token is not accepted for this service account. Nothing was saved.\n`);
    expect(run.stdout).toBe('');
    expect(run.code).toBe(4);
    expect(await box.readSession()).toEqual(before);
  });

  it('without the job’s id-token permission, says so in one line before asking anything', async () => {
    const { account } = await federatedAccount();
    const run = await box.run(login(account.clientId, '--federated-token', 'github'));
    expect(run.stderr).toBe(
      'Error: ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set: this job cannot ask GitHub Actions for an OIDC token.\n' +
        'Give the job (or the workflow) `permissions: id-token: write`; outside GitHub Actions, pass the token with --federated-token <file|->.\n',
    );
    expect(run.code).toBe(1);
    expect(box.hasSession()).toBe(false);
  });

  it('a new exchange replaces the session and ends its token; auth:logout ends the new one on the server', async () => {
    const { account, audience } = await federatedAccount();
    expect((await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) })).code).toBe(0);
    const first = (await box.readSession()).accessToken as string;
    const again = await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) });
    expect(again.stderr).toMatch(/^Replaced the session of nightly sync on \S+ \(ended on the server\)\.\nSession saved to /);
    const second = (await box.readSession()).accessToken as string;
    expect((await request(api, 'GET', '/api/cli/auth/me', { token: first })).status).toBe(401);

    const out = await box.run(['auth:logout']);
    expect(out.stdout).toBe(`Logged out of ${api.baseUrl} and revoked the token on the server.\n`);
    expect(out.code).toBe(0);
    expect(box.hasSession()).toBe(false);
    expect((await request(api, 'GET', '/api/cli/auth/me', { token: second })).status).toBe(401);
  });

  it('once its token has expired, a command says to run the exchange again: there is no refresh', async () => {
    const { account, audience } = await federatedAccount();
    expect((await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) })).code).toBe(0);
    // The hour gone by: the session as the file would hold it then.
    await box.writeSession({ ...(await box.readSession()), expiresAt: new Date(Date.now() - 60_000).toISOString() });
    const run = await box.run(['api', '/api/cli/auth/me']);
    expect(run.stderr).toMatch(
      new RegExp(`^Error: The token of service account ${account.clientId} expired at \\S+, and is not renewed — run the exchange again: \`prospect auth:login --service-account ${account.clientId} --federated-token <file\\|-\\|github>\`\\.\n$`),
    );
    expect(run.code).toBe(4);
  });

  it('a token the server refuses partway (revoked, the account disabled) says to run the exchange again, not a person’s login', async () => {
    const { slug, owner, account, audience } = await federatedAccount();
    const exchangeAgain = `run the exchange again: \`prospect auth:login --service-account ${account.clientId} --federated-token <file|-|github>\`.`;
    expect((await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) })).code).toBe(0);
    // Revoked on the server (RFC 7009), as another job's logout or an administrator would: the session file still holds it.
    const { accessToken } = await box.readSession();
    expect((await request(api, 'POST', '/oauth/revoke', { body: new URLSearchParams({ token: accessToken as string, token_type_hint: 'access_token' }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status).toBe(200);
    const revoked = await box.run(['api', '/api/cli/auth/me']);
    const wasRevoked = `Error: ${api.baseUrl} refused the token of service account ${account.clientId}: it was revoked (by a newer exchange, a logout, or an administrator) — ${exchangeAgain}\n`;
    expect(revoked.stderr).toBe(wasRevoked);
    expect(revoked.code).toBe(4);
    const orgs = await box.run(['org:list']);
    expect(orgs.stderr).toBe(wasRevoked);
    expect(orgs.code).toBe(4);
    // auth:whoami --verify asks the server, says the same, and removes the dead session.
    const whoami = await box.run(['auth:whoami', '--verify']);
    expect(whoami.stderr).toBe(wasRevoked.replace(' — ', '; removed the local session — '));
    expect(whoami.code).toBe(4);
    expect(box.hasSession()).toBe(false);

    // A fresh exchange, then an owner disables the account: its tokens are revoked at once, and the exchange it points to says why.
    expect((await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) })).code).toBe(0);
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/service-accounts/${account.id}`, { json: { disabled: true }, token: owner.token })).status).toBe(200);
    const disabled = await box.run(['api', '/api/cli/auth/me']);
    expect(disabled.stderr).toBe(wasRevoked);
    expect(disabled.code).toBe(4);
    const exchanged = await box.run(login(account.clientId, '--federated-token', '-'), { stdin: await ciToken(audience) });
    expect(exchanged.stderr).toBe(`Error: ${api.baseUrl} refused the token exchange (invalid_client): The service account ${account.clientId} is disabled: ask an admin of its organization. Nothing was saved.\n`);
    expect(exchanged.code).toBe(4);
  });
});
