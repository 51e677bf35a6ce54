import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `prospect` bin entry, as `npx prospect` runs it; it loads the built bundle (root `npm test` builds first). */
export const PROSPECT_JS = fileURLToPath(new URL('../../bin/prospect.cjs', import.meta.url));
/** What `npm run build` writes: every command in one CommonJS bundle. */
export const BUNDLE = fileURLToPath(new URL('../../dist/prospect.js', import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run \`npm run build -w @prospect/cli\` first.`);
}

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string>;
  /** Written to stdin, then closed. Without it stdin is empty (as in CI). */
  stdin?: string;
  /** Called once with the child, e.g. to send SIGINT when some output appears. */
  onStarted?: (child: ReturnType<typeof spawn>, output: () => string) => void;
  /**
   * `ulimit -f 0`: every write of a byte to a file fails with EFBIG, as on a full disk,
   * whoever runs the tests (root included); creating files and directories still works.
   */
  noFileWrites?: boolean;
}

/**
 * A config directory of its own per test, and a clean environment: nothing of
 * the developer's PROSPECT_* variables or session leaks into a test.
 */
export async function makeSandbox() {
  const root = await mkdtemp(join(tmpdir(), 'prospect-cli-e2e-'));
  const configDir = join(root, 'config');
  const sessionPath = join(configDir, 'auth-session.json');
  return {
    configDir,
    sessionPath,
    async writeSession(content: unknown) {
      await mkdir(configDir, { recursive: true, mode: 0o700 });
      await writeFile(sessionPath, typeof content === 'string' ? content : JSON.stringify(content), { mode: 0o600 });
    },
    async readSession(): Promise<any> {
      return JSON.parse(await readFile(sessionPath, 'utf8'));
    },
    hasSession: () => existsSync(sessionPath),
    /** Runs `prospect ...args` to completion. Asynchronous: an in-process API keeps answering meanwhile. */
    run(args: string[], options: RunOptions = {}): Promise<CliRun> {
      const command = options.noFileWrites ? ['/bin/sh', '-c', 'ulimit -f 0 && exec "$@"', 'sh', process.execPath] : [process.execPath];
      return runToEnd(command[0]!, [...command.slice(1), PROSPECT_JS, ...args], {
        env: { PATH: process.env.PATH!, HOME: root, CI: 'true', PROSPECT_CONFIG_DIR: configDir, ...options.env },
        stdin: options.stdin,
        onStarted: options.onStarted,
      });
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}
export type Sandbox = Awaited<ReturnType<typeof makeSandbox>>;

/** Runs a command to its end with exactly `env`, `stdin` written then closed, and its output collected. */
export function runToEnd(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; stdin?: string; onStarted?: RunOptions['onStarted'] },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
    options.onStarted?.(child, () => stdout + stderr);
  });
}

export const validSession = (apiBaseUrl: string, overrides: Record<string, unknown> = {}) => ({
  accessToken: `prs_${'a'.repeat(43)}`,
  apiBaseUrl,
  user: { id: 'u-1', email: 'ada@example.com', name: 'Ada Lovelace' },
  expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  createdAt: new Date().toISOString(),
  ...overrides,
});
