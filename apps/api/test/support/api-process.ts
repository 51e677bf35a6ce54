import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { waitFor } from './eventually.js';
import { get } from './http.js';
import { cleanUpOnExit, scaledTimeout } from './process-cleanup.js';

/** The built server, as `npm start` runs it (the test script builds it first). */
export const MAIN_JS = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface ApiProcess {
  child: ChildProcess;
  /** The base URL printed on the banner, e.g. http://localhost:41234 */
  baseUrl: string;
  stdout(): string;
  stderr(): string;
  /** Sends a signal and resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node dist/main.js` with PORT=0 and waits for its banner (bounded). */
export async function startApiProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<ApiProcess> {
  const child = spawn(process.execPath, [MAIN_JS], {
    // Every test client is 127.0.0.1: the per-address limits are lifted unless a test sets them.
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SIGNIN_PER_IP_PER_HOUR: '100000', SIGNUP_PER_IP_PER_HOUR: '100000', DEVICE_START_PER_IP_PER_MINUTE: '100000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const forget = cleanUpOnExit({ kill: child.pid! });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(forget);
  timeoutMs = scaledTimeout(timeoutMs);

  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner after ${timeoutMs} ms:\n${out}\n${err}`)), timeoutMs);
    const check = () => {
      const match = /running on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${out}\n${err}`));
    });
  });

  return {
    child,
    baseUrl,
    stdout: () => out,
    stderr: () => err,
    stop(signal = 'SIGTERM') {
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs main.js to completion (for configurations that must refuse to start). */
export function runApiProcess(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN_JS, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * A place in a spawned API's log: a request to a path of its own, waited for until its line is
 * written (the log is written in batches). Everything logged before the mark is before it.
 */
export async function logMark(api: ApiProcess): Promise<number> {
  const path = `/api/log-mark-${randomBytes(6).toString('hex')}`;
  await get(api.baseUrl, path);
  await waitFor('the log mark', () => api.stdout().includes(path));
  return api.stdout().indexOf(path);
}

/** What the API logged (pino JSON) after the mark `from` (and before `to`, else up to the last whole line), without the per-request lines. */
export const logLinesBetween = (api: ApiProcess, from: number, to = api.stdout().length) =>
  api
    .stdout()
    .slice(api.stdout().indexOf('\n', from) + 1, api.stdout().lastIndexOf('\n', to))
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.msg !== 'request completed');
