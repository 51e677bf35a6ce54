import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { isAlive, scaledTimeout } from '../support/process-cleanup.js';

const JEST = join(process.cwd(), '../../node_modules/jest/bin/jest.js');

/**
 * Issue #36: an interrupted `npm test` (Ctrl-C at the terminal, or a SIGTERM to jest) leaves no
 * API process and no Postgres cluster behind. Each case runs jest on a fixture that holds both.
 */
describe('an interrupted test run', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'prospect-interrupt-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  async function runHoldingFixture(): Promise<{ jest: ReturnType<typeof spawn>; pids: { api: number; postgres: number }; exited: Promise<number | null> }> {
    const pidsFile = join(dir, 'pids.json');
    const jest = spawn(
      process.execPath,
      ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', JEST, '--testMatch', '**/harness/fixtures/holds-resources.fixture.ts', '--testTimeout', '600000'],
      { env: { ...process.env, PIDS_FILE: pidsFile }, stdio: 'ignore', detached: true },
    );
    const exited = new Promise<number | null>((resolve) => jest.once('exit', (code) => resolve(code)));
    expect(await eventually(() => readFile(pidsFile, 'utf8').then(() => true, () => false), 120_000)).toBe(true);
    return { jest, pids: JSON.parse(await readFile(pidsFile, 'utf8')), exited };
  }

  it.each([
    ['Ctrl-C at the terminal (SIGINT to the whole process group)', (pid: number) => process.kill(-pid, 'SIGINT')],
    ['a SIGTERM to jest alone', (pid: number) => process.kill(pid, 'SIGTERM')],
  ])('%s ends the API process and the cluster', async (_, interrupt) => {
    const { jest, pids, exited } = await runHoldingFixture();
    expect(isAlive(pids.api) && isAlive(pids.postgres)).toBe(true);
    interrupt(jest.pid!);
    await exited;
    expect(await eventually(() => !isAlive(pids.api) && !isAlive(pids.postgres), 15_000)).toBe(true);
  }, scaledTimeout(180_000));
});
