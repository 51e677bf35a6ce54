import { ENV, type SessionFile } from '@prospect/contract';
import { type CommandContext, envToken, writeLine } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { sameAccount } from '../session/accounts.js';
import { withSessionLock } from '../session/session-lock.js';
import { accountName } from './account-choice.js';
import { requireSession } from './auth-guard.js';
import { apiUrlFlag, type Command } from './command.js';
import { type ActiveOrganization, activeOrganization, checkedSlug, describeOrganization, findOrganization } from './organization-choice.js';
import { printJson, readReportedSession } from './session-report.js';

/**
 * `prospect org:switch <slug>`: the organization the active account's commands act for, kept in
 * its session (the session file's optional `organization`), after the server says it is one of
 * the person's (GET /api/orgs/{slug}). `--none` clears it, asking the server nothing.
 */
export const orgSwitchCommand: Command = {
  name: 'org:switch',
  description: 'Choose the organization your commands act for, among yours (or --none)',
  usage: `
  Usage
    $ prospect org:switch <slug> [--json]
    $ prospect org:switch --none [--json]

  Options
    --none             Act for no organization from now on
    --json             Print the result as JSON, for scripts
    --api-url <url>    Check that the session is for this server

  The organization is kept with the active account's session (each account has its
  own), shown by \`prospect auth:status\` and \`auth:whoami\`, and sent to the server with
  every request as the Prospect-Organization header. \`--org <slug>\` on a command acts
  for another one for that run only. \`prospect org:list\` shows yours.

  Examples
    $ prospect org:switch acme
    $ prospect org:switch --none
`,
  flags: { ...apiUrlFlag, none: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
  positional: 1,
  requiresAuth: false,
  async run(ctx: CommandContext) {
    const [typed] = ctx.input;
    if (typed !== undefined && ctx.flags.none) throw usageError('Give a slug or --none, not both.');
    if (typed === undefined && !ctx.flags.none) throw usageError('Say which organization: `prospect org:switch <slug>` (`prospect org:list` shows yours), or --none for none.');
    const slug = typed === undefined ? undefined : checkedSlug(typed, 'The slug');
    if (envToken(ctx)) {
      throw new CliError(
        `${ENV.token} is set: commands use that token, not your session, which is where org:switch keeps the organization.`,
        1,
        `Pass --org <slug> to each command instead, or unset ${ENV.token} to use your session.`,
      );
    }
    let chosen: ActiveOrganization | undefined;
    let session: SessionFile;
    if (slug) {
      // The guard's way: the session renewed if due; the question carries the slug asked for.
      session = ctx.session = (await requireSession(ctx))!;
      ctx.actingFor = { apiBaseUrl: session.apiBaseUrl, slug };
      chosen = activeOrganization(await findOrganization(ctx, slug));
      session = ctx.session ?? session;
    } else {
      // Clearing asks the server nothing: it works offline, and with a session it would refuse.
      session = await readReportedSession(ctx);
    }
    const previous = await keepOrganization(ctx, session, chosen);
    const already = previous?.slug === chosen?.slug;
    if (ctx.flags.json) {
      printJson(ctx, { organization: chosen ?? null, previous: previous ?? null });
    } else if (!chosen) {
      writeLine(ctx.stdout, previous ? `No organization is active any more (it was ${previous.slug}): commands act for none.` : 'No organization was active; none is.');
    } else {
      writeLine(ctx.stdout, already ? `Already acting for ${describeOrganization(chosen)}.` : `Switched to ${describeOrganization(chosen)}, for ${accountName(session)}.`);
    }
  },
};

/**
 * Writes the organization into the session under the session's lock, on the session as it is now
 * (another process may have renewed it meanwhile: its tokens are kept). Says which one it replaced.
 */
function keepOrganization(ctx: CommandContext, session: SessionFile, organization: ActiveOrganization | undefined): Promise<ActiveOrganization | undefined> {
  return withSessionLock(ctx.store, async () => {
    const read = await ctx.store.read();
    if (read.kind !== 'session' || !sameAccount(read.session, session)) {
      throw new CliError(`The active account changed meanwhile (another prospect logged in, out or switched); nothing was changed.`, 1, 'See it with `prospect auth:status`, then run org:switch again.');
    }
    const { organization: previous, ...rest } = read.session;
    await ctx.store.write(organization ? { ...rest, organization } : rest);
    return previous;
  });
}
