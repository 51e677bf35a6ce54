import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { eventually } from '../support/eventually.js';
import { isAlive, scaledTimeout } from '../support/process-cleanup.js';

const JEST = join(process.cwd(), '../../node_modules/jest/bin/jest.js');

type Pids = { test: number; api: number; postgres: number };

/**
 * Issue #36: an interrupted `npm test` (Ctrl-C at the terminal, or a SIGTERM or SIGKILL to jest)
 * leaves no API process and no Postgres cluster behind. Each case runs jest on a fixture that holds
 * both, in band (the file runs in jest's own process) and in a worker (as every file does under
 * jest.config.js's workerIdleMemoryLimit, issue #49: a signal to jest alone does not reach it).
 */
describe('an interrupted test run', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'prospect-interrupt-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  async function runHoldingFixture(inBand: boolean): Promise<{ jest: ReturnType<typeof spawn>; pids: Pids; exited: Promise<unknown> }> {
    const pidsFile = join(dir, 'pids.json');
    // jest 29 runs a single file in band only without workerIdleMemoryLimit (--runInBand then still
    // makes one worker): the in-band run gets this workspace's config without it.
    const config = ((await import(pathToFileURL(join(process.cwd(), 'jest.config.js')).href)) as { default: Record<string, unknown> }).default;
    const inBandConfig = JSON.stringify({ ...config, rootDir: process.cwd(), workerIdleMemoryLimit: undefined });
    const jest = spawn(
      process.execPath,
      [
        '--experimental-vm-modules',
        '--no-warnings=ExperimentalWarning',
        JEST,
        ...(inBand ? ['--config', inBandConfig] : []),
        '--testMatch',
        '**/harness/fixtures/holds-resources.fixture.ts',
        '--testTimeout',
        '600000',
      ],
      { env: { ...process.env, PIDS_FILE: pidsFile }, stdio: 'ignore', detached: true },
    );
    const exited = new Promise((resolve) => jest.once('exit', resolve));
    expect(await eventually(() => readFile(pidsFile, 'utf8').then(() => true, () => false), 120_000)).toBe(true);
    return { jest, pids: JSON.parse(await readFile(pidsFile, 'utf8')) as Pids, exited };
  }

  const interrupts: [string, (pid: number) => void][] = [
    ['Ctrl-C at the terminal (SIGINT to the whole process group)', (pid) => process.kill(-pid, 'SIGINT')],
    ['a SIGTERM to jest alone', (pid) => process.kill(pid, 'SIGTERM')],
    ['a SIGKILL to jest alone', (pid) => process.kill(pid, 'SIGKILL')],
  ];
  const cases = interrupts.flatMap(([name, interrupt]) => [
    [name, 'in band', true, interrupt] as const,
    [name, 'in a worker', false, interrupt] as const,
  ]);

  it.each(cases)('%s, the file running %s, ends the API process, the cluster and the test process', async (_, _where, inBand, interrupt) => {
    const { jest, pids, exited } = await runHoldingFixture(inBand);
    // The case is the one it names: the file runs in jest's process, or in a worker of it.
    expect(pids.test === jest.pid).toBe(inBand);
    expect(isAlive(pids.api) && isAlive(pids.postgres)).toBe(true);
    interrupt(jest.pid!);
    await exited;
    expect(await eventually(() => !isAlive(pids.api) && !isAlive(pids.postgres) && !isAlive(pids.test), 15_000)).toBe(true);
  }, scaledTimeout(180_000));
});
