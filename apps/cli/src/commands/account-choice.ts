import type { SessionFile } from '@prospect/contract';
import { normalizeBaseUrl } from '../api-client/base-url.js';
import type { CommandContext } from '../context.js';
import { CliError, EXIT, usageError } from '../errors.js';
import type { FlagSpec } from './command.js';
import { person } from './session-report.js';

/** How `auth:switch` and `auth:logout` name a stored account without asking, as `gh auth switch --hostname --user` does. */
export const accountFlags: Record<string, FlagSpec> = { host: { type: 'string' }, user: { type: 'string' } };

export const ACCOUNT_FLAGS_USAGE = `    --host <url>        The account's server (http://host:port, or just host:port)
    --user <email>      The account's e-mail address (or the part before the @)`;

export const accountName = (session: Pick<SessionFile, 'apiBaseUrl' | 'user'>) => `${person(session.user)} on ${session.apiBaseUrl}`;

/** Quoted for a POSIX shell when it holds anything but plain characters, so a hint can be pasted as it is. */
const shellWord = (word: string) => (/^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

/** `prospect <command> --host … --user …` for one account: each hint is a command that runs. */
export function commandFor(command: string, account: Pick<SessionFile, 'apiBaseUrl' | 'user'>, which: Array<'host' | 'user'> = ['host', 'user']): string {
  const words = ['prospect', command];
  if (which.includes('host')) words.push('--host', shellWord(account.apiBaseUrl));
  if (which.includes('user')) words.push('--user', shellWord(account.user.email));
  return words.join(' ');
}

export interface WantedAccount {
  host?: string;
  user?: string;
}

/** What --host and --user ask for; undefined when neither is given. */
export function wantedAccount(ctx: Pick<CommandContext, 'flags'>): WantedAccount | undefined {
  const given = (name: 'host' | 'user') => {
    const value = ctx.flags[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !value.trim()) throw usageError(`--${name} needs a value.`);
    return value.trim();
  };
  const wanted = { host: given('host'), user: given('user') };
  return wanted.host === undefined && wanted.user === undefined ? undefined : wanted;
}

/**
 * The accounts that --host and --user name. A host with a scheme is a base URL, compared as
 * every command compares them (normalizeBaseUrl, which refuses a bad one); without one it is
 * the URL's host and port. A user is an e-mail address (any case), its part before the @, or an id.
 */
export function matchAccounts(accounts: SessionFile[], wanted: WantedAccount): SessionFile[] {
  const host = wanted.host;
  const base = host !== undefined && /^[a-z][a-z\d+.-]*:\/\//i.test(host) ? normalizeBaseUrl(host) : undefined;
  const onHost = (account: SessionFile) => host === undefined || (base ? account.apiBaseUrl === base : new URL(account.apiBaseUrl).host === host.toLowerCase());
  const user = wanted.user?.toLowerCase();
  const isUser = (account: SessionFile) => {
    if (user === undefined) return true;
    const email = account.user.email.toLowerCase();
    return email === user || email.slice(0, email.lastIndexOf('@')) === user || account.user.id === wanted.user;
  };
  return accounts.filter((account) => onHost(account) && isUser(account));
}

/** "--host X --user Y": how the flags were given, for messages. */
export const describeWanted = (wanted: WantedAccount) =>
  [wanted.host !== undefined ? `--host ${shellWord(wanted.host)}` : '', wanted.user !== undefined ? `--user ${shellWord(wanted.user)}` : ''].filter(Boolean).join(' ');

/**
 * Which of several `candidates` is meant: at a terminal, the person picks one (Ink, loaded only
 * here); anywhere else a prompt would hang a script, so it is one line saying which flags to
 * pass, with a command for one of them. Cancelling at the picker is exit 130, nothing changed.
 */
export async function pickAccount(
  ctx: CommandContext,
  candidates: SessionFile[],
  options: { command: string; question: string; active?: SessionFile; stored: number },
): Promise<SessionFile> {
  const isActive = (account: SessionFile) => account === options.active;
  if (!ctx.interactive) {
    const oneHost = candidates.every((account) => account.apiBaseUrl === candidates[0]!.apiBaseUrl);
    const oneUser = candidates.every((account) => account.user.email === candidates[0]!.user.email);
    const which: Array<'host' | 'user'> = oneHost ? ['user'] : oneUser ? ['host'] : ['host', 'user'];
    const example = candidates.find((account) => !isActive(account)) ?? candidates[0]!;
    const what = candidates.length === options.stored ? `${candidates.length} accounts are stored` : `${candidates.length} stored accounts match`;
    throw new CliError(`${what}: say which with ${which.map((flag) => `--${flag}`).join(' and ')}, e.g. \`${commandFor(options.command, example, which)}\` (\`prospect auth:status\` lists them).`);
  }
  const { runAccountPicker } = await import('../ui/account-picker.js');
  const choice = await runAccountPicker({
    question: options.question,
    items: candidates.map((account) => ({ label: accountName(account), active: isActive(account) })),
    initial: Math.max(0, candidates.findIndex((account) => !isActive(account))),
    stdout: ctx.stdout,
    stdin: ctx.stdin,
  });
  // The picker's last frame says "Cancelled." already.
  if (choice === undefined) throw new CliError('Cancelled. Nothing was changed.', EXIT.interrupted).markShown();
  return candidates[choice]!;
}
