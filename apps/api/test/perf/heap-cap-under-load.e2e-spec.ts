import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '@prospect/contract';
import autocannon from 'autocannon';
import { parseAllDocuments } from 'yaml';
import { MAIN_JS } from '../support/api-process.js';
import { cleanUpOnExit, scaledTimeout } from '../support/process-cleanup.js';
import { emptyServerDatabase } from '../support/server-database.js';

const LAUNCHER = fileURLToPath(new URL('../../scripts/node-with-heap-limit.sh', import.meta.url));
const DEPLOYMENT = new URL('../../../../deploy/kubernetes/deployment.yaml', import.meta.url);
const UNITS: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9, '': 1 };

/** The Deployment's memory limit in bytes ("384Mi" → 402653184). */
async function manifestMemoryLimit(): Promise<number> {
  const docs = parseAllDocuments(await readFile(DEPLOYMENT, 'utf8')).map((d) => d.toJS() as { kind: string; spec: any });
  const limit: string = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[0].resources.limits.memory;
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G|)$/.exec(limit);
  if (!m) throw new Error(`unreadable memory limit ${limit}`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

/**
 * The API as the image starts it (apps/api/scripts/node-with-heap-limit.sh, exec'ing node with the
 * heap flag it computes from the cgroup), with the cgroup's limit set to the Kubernetes manifest's,
 * under a load of device starts on a Postgres server. What is asserted is only that it comes
 * through: every answer a 200, no connection error, the process still serving afterwards. How
 * fast, and at what RSS, is the bench's to measure (docs/performance.md), never a test's.
 */
describe('the API with its heap capped from the manifest’s memory limit, under load', () => {
  let cgroup: string;
  let database: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    cgroup = await mkdtemp(join(tmpdir(), 'prospect-cgroup-'));
    database = await emptyServerDatabase();
  });
  afterAll(async () => {
    await database?.drop();
    await rm(cgroup, { recursive: true, force: true });
  });

  it('starts through the launcher with the old and young generations sized from the limit and answers every request of the load', async () => {
    const limit = await manifestMemoryLimit();
    await writeFile(join(cgroup, 'memory.max'), `${limit}\n`);
    const child = spawn('sh', [LAUNCHER, MAIN_JS], {
      env: {
        PATH: process.env.PATH,
        PROSPECT_CGROUP_ROOT: cgroup,
        NODE_ENV: 'production',
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        DATABASE_URL: database.url,
        DEVICE_START_PER_IP_PER_MINUTE: '1000000000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const forget = cleanUpOnExit({ kill: child.pid! });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      const baseUrl = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no banner:\n${out}\n${err}`)), scaledTimeout(60_000));
        child.stdout.on('data', () => {
          const match = /running on (http:\/\/\S+)/.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        void exited.then(({ code, signal }) => reject(new Error(`exited (${code ?? signal}) before listening:\n${out}\n${err}`)));
      });

      // The shell exec'd node: the process is Node itself, with the flags the limit gives.
      const cmdline = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0');
      expect(cmdline[0]).toMatch(/node$/);
      expect(cmdline).toContain(`--max-old-space-size=${Math.floor((Math.floor(limit / 2 ** 20) * 50) / 100)}`);
      expect(cmdline).toContain(`--max-semi-space-size=${Math.min(64, Math.max(16, Math.floor(limit / 2 ** 20 / 12)))}`);

      const result = await new Promise<autocannon.Result>((resolve, reject) =>
        autocannon(
          {
            url: baseUrl + ROUTES.deviceStart,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ clientName: 'heap-cap', hostname: 'test' }),
            connections: 16,
            amount: 5_000,
            timeout: 30,
          },
          (e, r) => (e ? reject(e) : resolve(r)),
        ),
      );
      expect(result.errors).toBe(0);
      expect(result.timeouts).toBe(0);
      expect(result.non2xx).toBe(0);
      expect(result['2xx']).toBe(5_000);
      expect(child.exitCode).toBeNull();
      const health = await fetch(baseUrl + ROUTES.health);
      expect(health.status).toBe(200);
      expect(err).not.toMatch(/heap out of memory|FATAL ERROR/);
    } finally {
      child.kill('SIGTERM');
      await exited;
      forget();
    }
  }, scaledTimeout(300_000));
});
