import leven from 'leven';
import meow from 'meow';
import { COMPLETION_USAGE, completionScript } from './completion.js';
import { CliError, EXIT, FileSystemError, usageError } from './errors.js';
import type { CommandContext } from './context.js';
import type { Command } from './commands/command.js';
import { COMMANDS } from './commands/index.js';
import { requireSession } from './commands/auth-guard.js';
import { configDir, SessionStore } from './session/session-store.js';
import { VERSION } from './version.js';
import type { FetchLike } from './api-client/api-client.js';
import { httpTransport } from './api-client/http-transport.js';

const GLOBAL_HELP = `
  prospect — the Prospect command line

  Usage
    $ prospect <command> [options]

  Commands
${[...COMMANDS.values()].map((c) => `    ${c.name.padEnd(14)} ${c.description}`).join('\n')}

  Run \`prospect help <command>\` (or \`prospect <command> --help\`) for a command's options,
  and \`prospect completion bash|zsh|fish\` for a shell completion script.

  Options
    --version [--verify]    this CLI's version; with --verify, the server's too

  Environment
    PROSPECT_API_BASE_URL   the server (--api-url beats it)
    PROSPECT_CONFIG_DIR     where the session file lives (default ~/.config/prospect)
    PROSPECT_TOKEN          a token to use instead of the session file (never written to disk)
    HTTPS_PROXY, NO_PROXY   the proxy every request goes through, and the hosts it does not
    NODE_EXTRA_CA_CERTS     a PEM file of your organization's CA, for a server its certificates
`;

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  fetch?: FetchLike;
  signal: AbortSignal;
}

/**
 * Parses, guards and runs one command; returns the exit code. Expected errors
 * become one readable line; a bug's stack is shown only with DEBUG set.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  let command: Command | undefined;
  try {
    if (!name || name === '--help' || name === '-h' || (name === 'help' && rest.length === 0)) {
      io.stdout.write(`${GLOBAL_HELP}\n`);
      return EXIT.ok;
    }
    if (name === 'help') {
      // `prospect help auth:login` is `prospect auth:login --help`.
      const [topic, ...extra] = rest;
      if (topic === 'completion' && !extra.length) {
        io.stdout.write(`${COMPLETION_USAGE}\n`);
        return EXIT.ok;
      }
      const helped = COMMANDS.get(topic!);
      if (!helped || extra.length) throw unknownCommand(topic!, extra);
      io.stdout.write(`\n  ${helped.description}\n${helped.usage}\n`);
      return EXIT.ok;
    }
    if (name === 'completion') {
      if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) {
        io.stdout.write(`${COMPLETION_USAGE}\n`);
        return EXIT.ok;
      }
      const script = rest.length === 1 ? completionScript(rest[0]!, [...COMMANDS.values()]) : undefined;
      if (!script) throw new CliError('Say which shell: `prospect completion bash`, `zsh` or `fish`.', EXIT.usage, 'Usage: prospect completion bash|zsh|fish (see `prospect completion --help`)');
      io.stdout.write(script);
      return EXIT.ok;
    }
    if (name === '--version' || name === '-v') {
      if (!rest.length) {
        io.stdout.write(`${VERSION}\n`);
        return EXIT.ok;
      }
      // `--version --verify`: the server's version too, under ours (loaded only then: startup time).
      const { parseVersionArgs, serverVersionLine } = await import('./server-version.js');
      const options = parseVersionArgs(rest);
      io.stdout.write(`${VERSION}\n`);
      io.stdout.write(`${await serverVersionLine(options, io)}\n`);
      return EXIT.ok;
    }
    command = COMMANDS.get(name);
    if (!command) throw unknownCommand(name, rest);

    // meow prints the help and exits 0 on --help. Unknown flags are ours to
    // report (meow would exit without the usage line).
    const parsed = meow(command.usage, {
      importMeta: { url: import.meta.url } as ImportMeta,
      // `-h` is help on every command, as `--help` is.
      argv: attachLoneDashValues(rest, command).map((arg) => (arg === '-h' ? '--help' : arg)),
      flags: command.flags as never,
      allowUnknownFlags: true,
      pkg: { name: 'prospect', version: VERSION },
      description: command.description,
      autoVersion: false,
      // A boolean flag declared without a default is undefined when not given, rather than
      // false: `auth:login --no-secure-storage` says something its absence does not.
      booleanDefault: undefined,
    });
    const declared = command.flags;
    const unknown = Object.keys(parsed.flags).filter((flag) => !(flag in declared));
    if (unknown.length) {
      const shown = unknown.map((flag) => (flag.length === 1 ? `-${flag}` : `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`));
      const known = Object.keys(declared).map((flag) => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
      const guess = shown.length === 1 ? closest(shown[0]!, known) : undefined;
      throw usageError(`Unknown option${shown.length > 1 ? 's' : ''} for ${command.name}: ${shown.join(', ')}${guess ? ` (did you mean ${guess}?)` : ''}`);
    }
    if (parsed.input.length > (command.positional ?? 0)) {
      throw usageError(`${command.name} takes ${command.positional ? `${command.positional} argument` : 'no arguments'}, not ${parsed.input.map((a) => JSON.stringify(a)).join(' ')}`);
    }
    const ctx: CommandContext = {
      input: parsed.input,
      flags: parsed.flags,
      env: io.env,
      stdout: io.stdout,
      // Getters: creating process.stderr and stdin costs startup time; most commands never use them.
      get stderr() {
        return io.stderr;
      },
      get stdin() {
        return io.stdin;
      },
      interactive: Boolean(io.stdout.isTTY && io.stdin.isTTY) && !isCi(io.env),
      store: new SessionStore(configDir(io.env), (line) => io.stderr.write(`${line}\n`)),
      // One transport per run: every request of the command goes through the same proxy dispatcher.
      fetch: io.fetch ?? httpTransport(io.env),
      signal: io.signal,
    };
    // The guard, in one place: before any guarded command's own code runs.
    if (command.requiresAuth) ctx.session = await requireSession(ctx);
    return (await command.run(ctx)) ?? EXIT.ok;
  } catch (err) {
    if (command && err instanceof CliError && err.exitCode === EXIT.usage && !err.hint) {
      return reportError(new CliError(err.message, EXIT.usage, usageLine(command)), io);
    }
    return reportError(err, io);
  }
}

/** The known name nearest to a mistyped one, when it is near enough to be what was meant. */
function closest(typed: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(typed.length / 3)) + 1;
  for (const name of known) {
    const distance = leven(typed, name);
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

/**
 * An unknown command, with the command meant when it can be told: gh's spellings (`auth login`,
 * `org list`, `whoami`, `status`) are this CLI's `auth:*` commands, and a typo is near a known name.
 */
function unknownCommand(name: string, rest: string[] = []): CliError {
  const usage = `Usage: prospect <command> [options]; commands: ${[...COMMANDS.keys()].join(', ')}`;
  const [sub, ...args] = rest;
  // `prospect auth login`, `prospect org list`: gh's spelling of a topic's command.
  if (name === 'auth' || name === 'org') {
    if (sub !== undefined && COMMANDS.has(`${name}:${sub}`)) return didYouMean(`${name} ${sub}`, [`${name}:${sub}`, ...args]);
    return usageError(`\`prospect ${name}\` needs a command: ${[...COMMANDS.keys()].filter((c) => c.startsWith(`${name}:`)).join(', ')}`, usage);
  }
  if (COMMANDS.has(`auth:${name}`)) return didYouMean(name, [`auth:${name}`, ...rest]);
  const guess = closest(name, [...COMMANDS.keys()]);
  return usageError(`Unknown command: ${name}${guess ? ` (did you mean \`prospect ${guess}\`?)` : ''}`, usage);
}

function didYouMean(typed: string, meant: string[]): CliError {
  const line = ['prospect', ...meant.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`))].join(' ');
  return usageError(`Unknown command: ${typed}. Did you mean \`${line}\`?`, `Commands are written with a colon here: ${meant[0]} (see \`prospect --help\`).`);
}

/** CI=true, CI=1 … but not CI=false or CI=0. */
const isCi = (env: NodeJS.ProcessEnv) => Boolean(env.CI) && !/^(false|0)$/i.test(env.CI!);

/**
 * yargs-parser (inside meow) does not take a lone "-" as a flag's value, but
 * `--token -` means "read it from stdin": pass it as `--token=-`.
 */
function attachLoneDashValues(args: string[], command: Command): string[] {
  const stringFlags = new Set(
    Object.entries(command.flags)
      .filter(([, spec]) => spec.type === 'string')
      .map(([name]) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`),
  );
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (stringFlags.has(args[i]!) && args[i + 1] === '-') out.push(`${args[i]}=${args[++i]}`);
    else out.push(args[i]!);
  }
  return out;
}

/** The first usage line of a command, for usage errors. */
export function usageLine(command: Command): string {
  const line = command.usage.split('\n').find((l) => l.trim().startsWith('$'))?.trim().replace(/^\$\s*/, '') ?? `prospect ${command.name}`;
  return `Usage: ${line} (see \`prospect ${command.name} --help\`)`;
}

function reportError(err: unknown, io: CliIo): number {
  if (io.signal.aborted && !(err instanceof CliError)) {
    io.stderr.write('Cancelled. Nothing was saved.\n');
    return EXIT.interrupted;
  }
  // A read-only or full disk is the machine's doing, not a bug: one sentence with the path.
  err = FileSystemError.from(err) ?? err;
  if (err instanceof CliError) {
    if (!err.shown) {
      io.stderr.write(`Error: ${err.message}\n`);
      if (err.hint) io.stderr.write(`${err.hint}\n`);
    }
    return err.exitCode;
  }
  io.stderr.write(`Unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
  if (io.env.DEBUG && err instanceof Error) io.stderr.write(`${err.stack}\n`);
  else io.stderr.write('This is a bug in prospect; run again with DEBUG=1 for details.\n');
  return EXIT.failure;
}
