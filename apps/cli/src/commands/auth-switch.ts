import { ENV, type SessionFile } from '@prospect/contract';
import { type CommandContext, envToken, writeLine } from '../context.js';
import { authRequired, CliError } from '../errors.js';
import { Accounts, activeOf, allOf } from '../session/accounts.js';
import { ACCOUNT_FLAGS_USAGE, accountFlags, accountName, describeWanted, matchAccounts, pickAccount, wantedAccount } from './account-choice.js';
import type { Command } from './command.js';

/** `prospect auth:switch`, as `gh auth switch`: which stored account the commands use. */
export const switchCommand: Command = {
  name: 'auth:switch',
  description: 'Switch the active account, among those you are logged in to',
  usage: `
  Usage
    $ prospect auth:switch                   (the other account, or pick one at a terminal)
    $ prospect auth:switch [--host <url>] [--user <email>]

  Options
${ACCOUNT_FLAGS_USAGE}

  Every \`prospect auth:login\` to another server, or as another person, keeps the
  accounts you were logged in to; \`prospect auth:status\` lists them. With two stored,
  auth:switch alone switches to the other one; with more, it asks at a terminal, and
  elsewhere says which flags to pass.

  Examples
    $ prospect auth:switch --host https://prospect.example.com
    $ prospect auth:switch --user grace@example.com
`,
  flags: accountFlags,
  requiresAuth: false,
  async run(ctx: CommandContext) {
    const wanted = wantedAccount(ctx);
    const accounts = new Accounts(ctx.store);
    const stored = await accounts.read();
    const all = allOf(stored);
    const active = activeOf(stored);
    if (!all.length) throw authRequired('Not logged in to any account — run `prospect auth:login`.');
    let target: SessionFile;
    if (wanted) {
      const matches = matchAccounts(all, wanted);
      if (!matches.length) throw new CliError(`No stored account matches ${describeWanted(wanted)}.`, 1, 'See the stored accounts with `prospect auth:status`.');
      target = matches.length === 1 ? matches[0]! : await pickAccount(ctx, matches, { command: 'auth:switch', question: 'Switch to which account?', active, stored: all.length });
    } else if (all.length === 1) {
      target = all[0]!;
    } else {
      // Two accounts, one active: the other one is meant, as gh switches between two.
      const others = all.filter((account) => account !== active);
      target = others.length === 1 ? others[0]! : await pickAccount(ctx, all, { command: 'auth:switch', question: 'Switch to which account?', active, stored: all.length });
    }
    const { now, already } = await accounts.switchTo(target);
    if (already) {
      writeLine(ctx.stdout, `${accountName(now)} is already the active account${all.length === 1 ? ', the only one stored' : ''}.`);
    } else {
      writeLine(ctx.stdout, `Switched to ${accountName(now)}.`);
    }
    if (envToken(ctx)) writeLine(ctx.stderr, `Warning: ${ENV.token} is set, and commands use it instead of this account. Unset it to use the account.`);
  },
};
