import { type CommandContext, writeLine } from '../context.js';
import { apiUrlFlag, type Command } from './command.js';
import { listOrganizations, lostWarning, notYours, ORG_FLAG_USAGE, orgFlag, requestedOrg } from './organization-choice.js';
import { printJson } from './session-report.js';

const OPTIONS: Array<[string, string]> = [
  ['--json', 'Print them as JSON, for scripts'],
  ORG_FLAG_USAGE('Mark this one instead of the active one'),
  ['--api-url <url>', 'Check that the session is for this server'],
];

/** `prospect org:list`, as `gh org list`: the person's organizations (GET /api/orgs), the one commands act for marked. */
export const orgListCommand: Command = {
  name: 'org:list',
  description: 'List your organizations and your role in each; the active one is marked',
  usage: `
  Usage
    $ prospect org:list [--json] [--org <slug>]

  Options
${OPTIONS.map(([flag, text]) => `    ${flag.padEnd(18)}${text}`).join('\n')}

  The organization marked with * is the one commands act for: they send its slug to
  the server as the Prospect-Organization header. \`prospect org:switch <slug>\` changes
  it, for the active account. Needs a session with the "orgs" scope (logins since
  organizations have it; \`prospect auth:refresh --scopes\` adds it to an older one).

  Examples
    $ prospect org:list
    $ prospect org:list --json | jq -r '.organizations[].slug'
`,
  flags: { ...apiUrlFlag, ...orgFlag, json: { type: 'boolean', default: false } },
  requiresAuth: true,
  async run(ctx: CommandContext) {
    const organizations = await listOrganizations(ctx);
    // The guard set what this run acts for: --org, else the session's.
    const marked = ctx.actingFor?.slug;
    const asked = requestedOrg(ctx) !== undefined;
    // --org names one to act for now: one that is not the person's is refused, as everywhere.
    if (asked && marked && !organizations.some((org) => org.slug === marked)) throw notYours(marked, false);
    const lost = !asked && marked !== undefined && !organizations.some((org) => org.slug === marked);
    if (ctx.flags.json) {
      printJson(ctx, {
        organizations: organizations.map(({ slug, name, role }) => ({ slug, name, role, active: slug === marked })),
        active: lost ? null : (marked ?? null),
      });
    } else if (!organizations.length) {
      writeLine(ctx.stdout, `You are not a member of any organization on ${ctx.credentials!.apiBaseUrl}: create one at ${ctx.credentials!.apiBaseUrl}/orgs, or ask an admin of yours for an invitation.`);
    } else {
      const slugWidth = Math.max(4, ...organizations.map((org) => org.slug.length));
      const nameWidth = Math.max(4, ...organizations.map((org) => org.name.length));
      writeLine(ctx.stdout, `  ${'SLUG'.padEnd(slugWidth)}  ${'NAME'.padEnd(nameWidth)}  ROLE`);
      for (const org of organizations) writeLine(ctx.stdout, `${org.slug === marked ? '*' : ' '} ${org.slug.padEnd(slugWidth)}  ${org.name.padEnd(nameWidth)}  ${org.role}`);
      if (!marked) writeLine(ctx.stdout, '\nNone is active: `prospect org:switch <slug>` picks the one commands act for.');
    }
    if (lost) writeLine(ctx.stderr, lostWarning(marked));
  },
};
