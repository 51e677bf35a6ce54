/**
 * Organizations in the CLI (issue #44 item 8, issue #48 item 5): `org:list`, `org:switch`, the
 * active organization in `auth:status` and `auth:whoami`, `--org`, and the Prospect-Organization
 * header. The built binary against the real API (organizations made and memberships ended through
 * it), and a recording backend where the header itself is what is checked.
 */
import type { Scope } from '@prospect/contract';
import { addMember, createOrganization, orgsToken, personWithToken } from '../../../api/test/support/organization-fixtures.js';
import { fakeBackend, json } from '../support/fake-backend.js';
import { validSession } from '../support/run-cli.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('orgs');

let ada: Awaited<ReturnType<typeof personWithToken>>;
beforeAll(async () => {
  ada = await personWithToken(api, { name: 'Ada Lovelace', email: `ada-orgs-${Date.now()}@example.com` });
});

/** Grace signs in the CLI with a token of `scopes`, as `auth:login --token` does. */
async function loginWith(scopes: Scope[] = ['profile', 'tokens', 'orgs']): Promise<void> {
  const run = await box.run(['auth:login', '--api-url', api.baseUrl, '--token', await orgsToken(api, person.id, scopes)]);
  expect(run.code).toBe(0);
}

/** One organization Grace owns, and one of Ada's where Grace is a member. */
async function twoOrganizations() {
  const own = await createOrganization(api, { token: await orgsToken(api, person.id) }, 'Grace Sales');
  const theirs = await createOrganization(api, ada, 'Ada Analytics');
  await addMember(api, theirs, ada.id, person, 'member');
  return { own, theirs };
}

const mine = <T extends { slug: string }>(listed: T[], ...slugs: string[]) => listed.filter((org) => slugs.includes(org.slug));

describe('org:list and org:switch against the real API', () => {
  it('lists them, switches, and every report shows the active one; --org acts for another for one run; --none clears it', async () => {
    await loginWith();
    const { own, theirs } = await twoOrganizations();

    const listed = await box.run(['org:list', '--json']);
    expect(listed.code).toBe(0);
    const body = JSON.parse(listed.stdout);
    expect(body.active).toBeNull();
    expect(mine<{ slug: string; name: string }>(body.organizations, own, theirs).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { slug: theirs, name: 'Ada Analytics', role: 'member', active: false },
      { slug: own, name: 'Grace Sales', role: 'owner', active: false },
    ]);
    const plain = await box.run(['org:list']);
    expect(plain.stdout).toMatch(new RegExp(`^  SLUG +NAME +ROLE$`, 'm'));
    expect(plain.stdout).toMatch(new RegExp(`^  ${own} +Grace Sales +owner$`, 'm'));
    expect(plain.stdout).toContain('None is active: `prospect org:switch <slug>` picks the one commands act for.');

    const switched = await box.run(['org:switch', theirs]);
    expect(switched).toMatchObject({ code: 0, stderr: '' });
    expect(switched.stdout).toBe(`Switched to Ada Analytics (${theirs}), as member, for Grace Hopper <${person.email}> on ${api.baseUrl}.\n`);
    expect((await box.readSession()).organization).toEqual({ slug: theirs, name: 'Ada Analytics', role: 'member' });

    expect((await box.run(['org:list'])).stdout).toMatch(new RegExp(`^\\* ${theirs} +Ada Analytics +member$`, 'm'));
    expect(JSON.parse((await box.run(['org:list', '--json'])).stdout).active).toBe(theirs);

    const whoami = await box.run(['auth:whoami']);
    expect(whoami.stdout).toContain(`\nActing for Ada Analytics (${theirs}), as member\n`);
    const verified = JSON.parse((await box.run(['auth:whoami', '--verify', '--json'])).stdout);
    expect(verified.organization).toEqual({ slug: theirs, name: 'Ada Analytics', role: 'member' });
    // /me's organizations, for a token with `orgs`: every one of hers, with ids.
    expect(mine(verified.organizations, own, theirs)).toHaveLength(2);
    expect(verified.organizations[0]).toEqual({ id: expect.any(String), slug: expect.any(String), name: expect.any(String), role: expect.any(String) });

    const status = await box.run(['auth:status']);
    expect(status.stdout).toContain(`Organization: Ada Analytics (${theirs}), as member; commands act for it\n`);
    expect(JSON.parse((await box.run(['auth:status', '--verify', '--json'])).stdout).organization).toEqual({ slug: theirs, name: 'Ada Analytics', role: 'member' });

    // --org: another one for this run, asked of the server; the session keeps its own.
    const other = await box.run(['auth:status', '--org', own, '--json']);
    expect(JSON.parse(other.stdout).organization).toEqual({ slug: own, name: 'Grace Sales', role: 'owner' });
    expect((await box.run(['org:list', '--org', own])).stdout).toMatch(new RegExp(`^\\* ${own} +Grace Sales +owner$`, 'm'));
    expect((await box.readSession()).organization.slug).toBe(theirs);

    expect((await box.run(['org:switch', theirs])).stdout).toBe(`Already acting for Ada Analytics (${theirs}), as member.\n`);

    const cleared = await box.run(['org:switch', '--none', '--json']);
    expect(cleared.code).toBe(0);
    expect(JSON.parse(cleared.stdout)).toEqual({ organization: null, previous: { slug: theirs, name: 'Ada Analytics', role: 'member' } });
    expect(await box.readSession()).not.toHaveProperty('organization');
    expect(JSON.parse((await box.run(['auth:whoami', '--json'])).stdout).organization).toBeNull();
    expect((await box.run(['org:switch', '--none'])).stdout).toBe('No organization was active; none is.\n');
  });

  it('a membership ended on the server: reports say so, org:switch and --org refuse it in one line', async () => {
    await loginWith();
    const { theirs } = await twoOrganizations();
    expect((await box.run(['org:switch', theirs])).code).toBe(0);
    // Ada removes Grace, as an owner does on the organization's page.
    const removed = await fetch(`${api.baseUrl}/api/orgs/${theirs}/members/${person.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ada.token}` } });
    expect(removed.status).toBe(204);

    const listed = await box.run(['org:list', '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).active).toBeNull();
    expect(listed.stderr).toBe(`Warning: ${theirs}, your active organization, is no longer one of yours — run \`prospect org:switch <slug>\` for another, or \`prospect org:switch --none\`.\n`);

    const status = await box.run(['auth:status', '--verify']);
    expect(status.stdout).toContain(`Organization: ${theirs}, no longer one of yours: \`prospect org:switch <slug>\` another, or \`prospect org:switch --none\`\n`);
    const statusJson = JSON.parse((await box.run(['auth:status', '--verify', '--json'])).stdout);
    expect(statusJson).toMatchObject({ organization: null, lostOrganization: theirs });

    const again = await box.run(['org:switch', theirs]);
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(again.stderr).toBe(`Error: ${theirs}, your active organization, is not (or no longer) one of yours — run \`prospect org:switch <slug>\` for another, or \`prospect org:switch --none\`.\n`);
    const asked = await box.run(['auth:whoami', '--org', theirs]);
    expect(asked).toMatchObject({ code: 1, stdout: '' });
    expect(asked.stderr).toBe(`Error: ${theirs} is not (or no longer) one of your organizations — \`prospect org:list\` shows yours.\n`);
    const never = await box.run(['org:switch', 'no-such-org-here']);
    expect(never.stderr).toBe('Error: no-such-org-here is not (or no longer) one of your organizations — `prospect org:list` shows yours.\n');
    // Refused: the session still names the one it had, until --none or another is chosen.
    expect((await box.readSession()).organization.slug).toBe(theirs);
  });

  it('a session without the `orgs` scope (made before organizations): one line with the auth:refresh that adds it, exit 4', async () => {
    await loginWith(['profile', 'tokens']);
    const line = 'Error: Your session was not granted the “orgs” scope, which organizations need — run `prospect auth:refresh --scopes profile,tokens,orgs`, or sign in again with `prospect auth:login`.\n';
    for (const args of [['org:list'], ['org:switch', 'acme'], ['auth:whoami', '--org', 'acme']]) {
      const run = await box.run(args);
      expect({ args, code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({ args, code: 4, stdout: '', stderr: line });
    }
    // What needs no organization still works.
    expect(JSON.parse((await box.run(['auth:whoami', '--verify', '--json'])).stdout)).toMatchObject({ verified: true, organization: null });
  });

  it('a new login of the same account keeps its organization', async () => {
    await loginWith();
    const { own } = await twoOrganizations();
    expect((await box.run(['org:switch', own])).code).toBe(0);
    await loginWith();
    expect((await box.readSession()).organization).toEqual({ slug: own, name: 'Grace Sales', role: 'owner' });
  });

  it('with PROSPECT_TOKEN: --org works, org:switch says where the organization is kept', async () => {
    const { own } = await twoOrganizations();
    const env = { PROSPECT_TOKEN: await orgsToken(api, person.id), PROSPECT_API_BASE_URL: api.baseUrl };
    const whoami = await box.run(['auth:whoami', '--org', own, '--json'], { env });
    expect(JSON.parse(whoami.stdout).organization).toEqual({ slug: own, name: 'Grace Sales', role: 'owner' });
    expect((await box.run(['org:list', '--org', own], { env })).stdout).toMatch(new RegExp(`^\\* ${own} `, 'm'));
    const run = await box.run(['org:switch', own], { env });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      'Error: PROSPECT_TOKEN is set: commands use that token, not your session, which is where org:switch keeps the organization.\nPass --org <slug> to each command instead, or unset PROSPECT_TOKEN to use your session.\n',
    );
  });
});

describe('what is refused before anything is asked', () => {
  it.each([
    [['org:switch', 'Acme'], 'Error: The slug "Acme" is not an organization\'s slug (did you mean acme?): a slug is 2 to 40 lower-case letters, digits or "-"; `prospect org:list` shows yours.'],
    [['org:switch'], 'Error: Say which organization: `prospect org:switch <slug>` (`prospect org:list` shows yours), or --none for none.'],
    [['org:switch', 'acme', '--none'], 'Error: Give a slug or --none, not both.'],
    [['org:list', '--org', 'a b'], 'Error: --org "a b" is not an organization\'s slug: a slug is 2 to 40 lower-case letters, digits or "-"; `prospect org:list` shows yours.'],
    [['api', '/x', '--org', 'acme', '-H', 'Prospect-Organization: beta'], 'Error: --org and -H Prospect-Organization say the same thing: give one.'],
    [['org', 'list'], 'Error: Unknown command: org list. Did you mean `prospect org:list`?'],
  ])('%j: exit 2, one error line', async (args, line) => {
    await loginWith();
    const run = await box.run(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n')[0]).toBe(line);
  });

  it('not logged in: the login command, exit 4', async () => {
    for (const args of [['org:list'], ['org:switch', 'acme'], ['org:switch', '--none']]) {
      const run = await box.run(args);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 4, stderr: 'Error: Not logged in — run `prospect auth:login`.\n' });
    }
  });

  it('says what they do in their help', async () => {
    expect((await box.run(['help', 'org:switch'])).stdout).toContain('$ prospect org:switch <slug> [--json]');
    expect((await box.run(['org:list', '--help'])).stdout).toContain('Prospect-Organization header');
    expect((await box.run(['--help'])).stdout).toMatch(/org:list +List your organizations/);
  });
});

describe('the Prospect-Organization header', () => {
  let backend: Awaited<ReturnType<typeof fakeBackend>>;
  const me = { user: { id: 'u-1', email: 'ada@example.com', name: 'Ada Lovelace' }, expiresAt: new Date(Date.now() + 3_600_000).toISOString() };
  beforeEach(async () => {
    backend = await fakeBackend({
      'GET /echo': (_q, _b, res) => json(res, 200, {}),
      'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, me),
    });
  });
  afterEach(() => backend.close());
  const sent = () => backend.requests.map((request) => request.headers['prospect-organization']);
  const acme = { slug: 'acme', name: 'Acme', role: 'admin' };

  it('carries the active organization on every request, --org for one run, and none when none is active', async () => {
    await box.writeSession(validSession(backend.url, { organization: acme }));
    expect((await box.run(['api', '/echo'])).code).toBe(0);
    expect((await box.run(['api', '/echo', '--org', 'beta'])).code).toBe(0);
    // -H replaces it, as it replaces any default header.
    expect((await box.run(['api', '/echo', '-H', 'Prospect-Organization: gamma'])).code).toBe(0);
    expect((await box.run(['auth:whoami', '--verify'])).code).toBe(0);
    expect((await box.run(['auth:status', '--verify'])).code).toBe(0);
    await box.writeSession(validSession(backend.url));
    expect((await box.run(['api', '/echo'])).code).toBe(0);
    expect(sent()).toEqual(['acme', 'beta', 'gamma', 'acme', 'acme', undefined]);
  });

  it('is never sent to another server than the session\'s', async () => {
    const other = await fakeBackend({ 'GET /echo': (_q, _b, res) => json(res, 200, {}) });
    try {
      await box.writeSession(validSession(backend.url, { organization: acme }));
      const run = await box.run(['api', '/echo'], { env: { PROSPECT_TOKEN: 'prs_from_env', PROSPECT_API_BASE_URL: other.url } });
      expect(run.code).toBe(0);
      expect(other.requests[0]!.headers['prospect-organization']).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('a session file of an older CLI (no organization) is read as it was; a malformed organization makes it invalid, as any field would', async () => {
    await box.writeSession(validSession(backend.url));
    expect((await box.run(['auth:whoami', '--json'])).code).toBe(0);
    await box.writeSession(validSession(backend.url, { organization: { slug: 'Not A Slug', name: 'x', role: 'member' } }));
    const run = await box.run(['auth:whoami']);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('is not a valid session (organization.slug:');
  });
});
