/**
 * `prospect events` against the real API (issue #46): an organization's events as lines and as
 * NDJSON, following them as new ones are written, Ctrl-C, and the refusals.
 */
import { EventSchema } from '@prospect/contract';
import { createOrganization, orgsToken } from '../../../api/test/support/organization-fixtures.js';
import { waitFor } from '../../../api/test/support/eventually.js';
import { request } from '../../../api/test/support/http.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('events');

describe('prospect events', () => {
  let token: string;
  let slug: string;
  beforeAll(async () => {
    token = await orgsToken(api, person.id);
    slug = await createOrganization(api, { token }, 'Analytical Engines');
    expect((await request(api, 'PATCH', `/api/orgs/${slug}`, { json: { name: 'Engines' }, token })).status).toBe(200);
    // Shown once every older transaction on the Postgres server has ended (docs/events.md): other test files' too.
    await waitFor('the two events to settle', async () => (await request(api, 'GET', `/api/orgs/${slug}/events`, { token })).body.events?.length === 2, 30_000);
  });
  const login = async () => expect((await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token])).code).toBe(0);

  it('prints an organization’s events, one JSON object per line with --json, one readable line each without', async () => {
    await login();
    const json = await box.run(['events', '--org', slug, '--json']);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const events = json.stdout.trimEnd().split('\n').map((line) => EventSchema.parse(JSON.parse(line)));
    expect(events.map((e) => e.type)).toEqual(['organization.created', 'organization.renamed']);
    expect(events[1]).toMatchObject({ actor: { type: 'user', email: person.email }, organization: { slug, name: 'Engines' } });

    const lines = await box.run(['events', '--org', slug, '--types', 'organization.renamed']);
    expect(lines.code).toBe(0);
    // The actor starts at one column whatever the type (padded to the catalogue's longest); what may be missing is named by a word.
    expect(lines.stdout.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:]+Z  organization\\.renamed {20}${person.email.replace(/\./g, '\\.')}  in ${slug}  from 127\\.0\\.0\\.1  ${events[1]!.id}$`))]);
    expect(lines.stderr).toBe('');
    // Nothing of a type: said on stderr, stdout empty.
    expect(await box.run(['events', '--org', slug, '--types', 'webhook.deleted'])).toMatchObject({ code: 0, stdout: '', stderr: `No events of type webhook.deleted in ${slug}.\n` });

    // Paged with a small --limit, the same events; --after continues after one.
    const paged = await box.run(['events', '--org', slug, '--json', '--limit', '1']);
    expect(paged.stdout).toBe(json.stdout);
    const after = await box.run(['events', '--org', slug, '--json', '--after', events[0]!.id]);
    expect(after.stdout).toBe(`${json.stdout.split('\n')[1]}\n`);
  });

  it('--follow prints new events as they come; Ctrl-C stops it with exit 130 and says where to continue', async () => {
    await login();
    let renamed = false;
    let stopped = false;
    const run = await box.run(['events', '--org', slug, '--follow', '--json'], {
      onStarted: (child, output) => {
        child.stdout!.on('data', () => {
          const lines = output().split('\n').filter((l) => l.startsWith('{'));
          if (!renamed && lines.length >= 2) {
            renamed = true;
            void request(api, 'PATCH', `/api/orgs/${slug}`, { json: { name: 'Engines Followed' }, token });
          }
          if (!stopped && lines.some((l) => l.includes('Engines Followed'))) stopped = child.kill('SIGINT');
        });
      },
    });
    expect(run.code).toBe(130);
    const events = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: string; data: { name?: string } });
    expect(events.at(-1)!.data.name).toBe('Engines Followed');
    expect(run.stderr).toBe(`Stopped. Continue with --after ${events.at(-1)!.id}\n`);
  });

  it('says what is wrong: not an admin of the instance, an unknown type, a bad --after or --org', async () => {
    await login();
    const instance = await box.run(['events']);
    expect(instance.code).toBe(1);
    expect(instance.stderr).toMatch(/Without --org, `prospect events` reads the instance's events, which only administrators may/);
    const unknownType = await box.run(['events', '--org', slug, '--types', 'user.logged_in']);
    expect(unknownType).toMatchObject({ code: 1, stdout: '' });
    expect(unknownType.stderr).toMatch(/^Error: Unknown event type in `types`: "user\.logged_in"/);
    expect(await box.run(['events', '--org', slug, '--after', 'yesterday'])).toMatchObject({ code: 2, stdout: '' });
    expect(await box.run(['events', '--org', 'Not A Slug'])).toMatchObject({ code: 2, stdout: '' });
    expect((await box.run(['events', '--org', slug, '--limit', '5000'])).code).toBe(2);
  });
});
