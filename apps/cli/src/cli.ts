import meow from 'meow';
import { CliError, EXIT, usageError } from './errors.js';
import type { CommandContext } from './context.js';
import { COMMANDS } from './commands/index.js';
import { requireSession } from './session/auth-guard.js';
import { configDir, SessionStore } from './session/session-store.js';
import { VERSION } from './version.js';
import type { FetchLike } from './api-client/api-client.js';

const GLOBAL_HELP = `
  prospect — the Prospect command line

  Usage
    $ prospect <command> [options]

  Commands
${[...COMMANDS.values()].map((c) => `    ${c.name.padEnd(14)} ${c.summary}`).join('\n')}

  Run \`prospect <command> --help\` for a command's options.

  Environment
    PROSPECT_API_BASE_URL   the server (--api-url beats it)
    PROSPECT_CONFIG_DIR     where the session file lives (default ~/.config/prospect)
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
  try {
    if (!name || name === '--help' || name === '-h' || name === 'help') {
      io.stdout.write(`${GLOBAL_HELP}\n`);
      return name ? EXIT.ok : EXIT.usage;
    }
    if (name === '--version' || name === '-v') {
      io.stdout.write(`${VERSION}\n`);
      return EXIT.ok;
    }
    const command = COMMANDS.get(name);
    if (!command) throw usageError(`Unknown command: ${name}.`, 'Run `prospect --help` to see the commands.');

    // meow prints usage and exits 2 on unknown flags, 0 on --help.
    const parsed = meow(command.usage, {
      importMeta: import.meta,
      argv: rest,
      flags: command.flags as never,
      allowUnknownFlags: false,
      pkg: { name: 'prospect', version: VERSION },
      description: command.summary,
      autoVersion: false,
    });
    const ctx: CommandContext = {
      input: parsed.input,
      flags: parsed.flags,
      env: io.env,
      stdout: io.stdout,
      stderr: io.stderr,
      stdin: io.stdin,
      interactive: Boolean(io.stdout.isTTY && io.stdin.isTTY) && !io.env.CI,
      store: new SessionStore(configDir(io.env)),
      fetch: io.fetch,
      signal: io.signal,
    };
    // The guard, in one place: before any guarded command's own code runs.
    if (command.requiresAuth) ctx.session = await requireSession(ctx);
    return (await command.run(ctx)) ?? EXIT.ok;
  } catch (err) {
    return reportError(err, io);
  }
}

function reportError(err: unknown, io: CliIo): number {
  if (io.signal.aborted && !(err instanceof CliError)) {
    io.stderr.write('Cancelled. Nothing was saved.\n');
    return EXIT.interrupted;
  }
  if (err instanceof CliError) {
    if (!(err as { shown?: boolean }).shown) {
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
