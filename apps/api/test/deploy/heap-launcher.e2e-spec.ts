import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const LAUNCHER = fileURLToPath(new URL('../../scripts/node-with-heap-limit.sh', import.meta.url));
const MiB = 1024 * 1024;

/** What the launched Node says about itself: the flags it was given and its old-generation limit. */
const REPORT = "console.log(JSON.stringify({ execArgv: process.execArgv.filter((a) => a.startsWith('--')), args: process.argv.slice(1) }))";

/**
 * The launcher is run for real (sh, then the Node it execs) against fake cgroup files in a temp
 * directory: only the limit it reads is fake.
 */
describe('apps/api/scripts/node-with-heap-limit.sh', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'prospect-cgroup-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const launch = async (env: Record<string, string> = {}, args: string[] = ['-e', REPORT, 'extra-arg']) => {
    const { stdout } = await promisify(execFile)('sh', [LAUNCHER, ...args], { env: { PATH: process.env.PATH, PROSPECT_CGROUP_ROOT: root, ...env } });
    return JSON.parse(stdout) as { execArgv: string[]; args: string[] };
  };
  const cgroupV2 = (value: string) => writeFile(join(root, 'memory.max'), `${value}\n`);
  const cgroupV1 = async (value: string) => {
    await mkdir(join(root, 'memory'));
    await writeFile(join(root, 'memory', 'memory.limit_in_bytes'), `${value}\n`);
  };

  it('gives the old generation half of a cgroup v2 limit and each semi-space a twelfth, and passes the arguments through unchanged', async () => {
    await cgroupV2(String(384 * MiB));
    await expect(launch()).resolves.toEqual({ execArgv: ['--max-old-space-size=192', '--max-semi-space-size=32'], args: ['extra-arg'] });
  });

  it('rounds a limit that is not a whole number of MiB down', async () => {
    await cgroupV2(String(300 * MiB + 123_456));
    expect((await launch()).execArgv).toEqual(['--max-old-space-size=150', '--max-semi-space-size=25']);
  });

  it('takes another share from PROSPECT_HEAP_PERCENT', async () => {
    await cgroupV2(String(1024 * MiB));
    expect((await launch({ PROSPECT_HEAP_PERCENT: '60' })).execArgv).toEqual(['--max-old-space-size=614', '--max-semi-space-size=64']);
  });

  it('reads cgroup v1 when there is no v2 file, and reads its "no limit" number as no limit', async () => {
    await cgroupV1(String(512 * MiB));
    expect((await launch()).execArgv).toEqual(['--max-old-space-size=256', '--max-semi-space-size=42']);
    await writeFile(join(root, 'memory', 'memory.limit_in_bytes'), '9223372036854771712\n');
    expect((await launch()).execArgv).toEqual([]);
  });

  it('adds no flag without a limit: "max", or no cgroup file at all', async () => {
    expect((await launch()).execArgv).toEqual([]);
    await cgroupV2('max');
    expect((await launch()).execArgv).toEqual([]);
  });

  it('never goes below 64 MiB, which the API needs to hold its live heap, nor below V8’s own 16 MiB semi-spaces', async () => {
    await cgroupV2(String(96 * MiB));
    expect((await launch()).execArgv).toEqual(['--max-old-space-size=64', '--max-semi-space-size=16']);
  });

  it('leaves an operator’s own --max-old-space-size or --max-semi-space-size in NODE_OPTIONS alone', async () => {
    await cgroupV2(String(384 * MiB));
    expect((await launch({ NODE_OPTIONS: '--max-semi-space-size=8' })).execArgv).toEqual(['--max-old-space-size=192']);
    const { execArgv } = await launch({ NODE_OPTIONS: '--max-old-space-size=300' });
    expect(execArgv).toEqual(['--max-semi-space-size=32']);
    const { stdout } = await promisify(execFile)('sh', [LAUNCHER, '-p', "require('node:v8').getHeapStatistics().heap_size_limit"], {
      env: { PATH: process.env.PATH, PROSPECT_CGROUP_ROOT: root, NODE_OPTIONS: '--max-old-space-size=300' },
    });
    // Old generation 300 MiB plus the young generation V8 adds to the limit.
    expect(Number(stdout) / MiB).toBeGreaterThanOrEqual(300);
  });

  it('refuses a share outside 10–90 % with a clear message', async () => {
    await cgroupV2(String(384 * MiB));
    await expect(launch({ PROSPECT_HEAP_PERCENT: '95' })).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('PROSPECT_HEAP_PERCENT must be a whole number from 10 to 90') });
    await expect(launch({ PROSPECT_HEAP_PERCENT: 'half' })).rejects.toMatchObject({ code: 2 });
  });
});
