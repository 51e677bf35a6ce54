/**
 * Traces end to end (docs/operations.md, "Traces"): the built API as `npm start` runs it, with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a small OTLP/HTTP receiver, on a real Postgres; one
 * request of the built `prospect` CLI with a TRACEPARENT. The CLI's request, the server's span
 * of it and its SQL form one trace, no span carries a secret, and the request's log line names
 * the trace. Without the variable nothing is sent and the log lines carry no trace.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '@prospect/contract';
import { sha256 } from '../../src/common/secrets.js';
import { REQUEST_ID_ATTRIBUTE } from '../../src/telemetry/tracing.js';
import { startApiProcess, type ApiProcess } from '../support/api-process.js';
import { eventually } from '../support/eventually.js';
import { approveInBrowser, poll, startDeviceLogin } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { scaledTimeout } from '../support/process-cleanup.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { otlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

/** The `prospect` bin entry of the CLI workspace; it loads the bundle `npm run build` writes. */
const PROSPECT_JS = fileURLToPath(new URL('../../../cli/bin/prospect.cjs', import.meta.url));
const CLI_BUNDLE = fileURLToPath(new URL('../../../cli/dist/prospect.js', import.meta.url));
const SERVER = 2;
const CLIENT = 3;

/** Runs `prospect ...args` to completion with only `env` (and PATH) as its environment. */
function prospect(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PROSPECT_JS, ...args], { env: { PATH: process.env.PATH, CI: 'true', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const logLines = (api: ApiProcess) =>
  api
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** Every attribute value of every span, as text, with where it was found. */
const attributeTexts = (spans: ReceivedSpan[]) =>
  spans.flatMap((span) => Object.entries(span.attributes).map(([key, value]) => ({ where: `${span.name} ${key}`, text: JSON.stringify(value) })));

describe('traces (OpenTelemetry, OTLP/HTTP)', () => {
  let database: Awaited<ReturnType<typeof emptyServerDatabase>>;
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let home: string;

  beforeAll(async () => {
    if (!existsSync(CLI_BUNDLE)) throw new Error(`${CLI_BUNDLE} is missing: run \`npm run build\` first.`);
    database = await emptyServerDatabase();
    receiver = await otlpReceiver();
    home = await mkdtemp(join(tmpdir(), 'prospect-traces-'));
  });
  afterAll(async () => {
    await receiver?.close();
    await database?.drop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("one CLI request and its SQL form the CLI's trace; no secret in any span; the log line names the trace", async () => {
    // Batches every 60 s: the spans can only arrive by the flush of the API's shutdown (or a full batch).
    const api = await startApiProcess({ DATABASE_URL: database.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '60000' }, 60_000);
    let stopped = false;
    try {
      // A person's token, as a device login gives it (a browser signs up and approves).
      const start = await startDeviceLogin(api.baseUrl);
      const email = await approveInBrowser(api.baseUrl, start.userCode);
      const authorized = await poll(api.baseUrl, start.deviceCode);
      const token = authorized.body.accessToken as string;
      expect(token).toMatch(/^prs_/);

      const traceId = randomBytes(16).toString('hex');
      const callerSpanId = randomBytes(8).toString('hex');
      const run = await prospect(['api', ROUTES.me], {
        HOME: home,
        PROSPECT_CONFIG_DIR: join(home, 'config'),
        PROSPECT_API_BASE_URL: api.baseUrl,
        PROSPECT_TOKEN: token,
        TRACEPARENT: `00-${traceId}-${callerSpanId}-01`,
      });
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(run.stdout)).toMatchObject({ user: { email } });

      // The request's log line is written when its answer is finished: there by the time the CLI has read it, give or take the 1 s flush.
      const isMine = (line: Record<string, unknown>) => line.msg === 'request completed' && (line.req as { url?: string } | undefined)?.url === ROUTES.me;
      expect(await eventually(() => logLines(api).some((line) => isMine(line) && line.trace_id === traceId), 5_000)).toBe(true);
      const line = logLines(api).find((l) => isMine(l) && l.trace_id === traceId)!;

      const exit = await api.stop('SIGTERM');
      stopped = true;
      expect(exit).toBe(0);
      expect(receiver.refused).toEqual([]);

      const trace = receiver.spans.filter((span) => span.traceId === traceId);
      const server = trace.find((span) => span.kind === SERVER);
      expect(server).toMatchObject({ name: `GET ${ROUTES.me}`, scope: '@opentelemetry/instrumentation-http', resource: { 'service.name': 'prospect-api', 'service.version': expect.stringMatching(/^\d+\.\d+\.\d+/) } });
      // The CLI's request is a span of its own under the caller's: a new parent id, never the one it was given.
      expect(server!.parentSpanId).toMatch(/^[\da-f]{16}$/);
      expect(server!.parentSpanId).not.toBe(callerSpanId);
      expect(server!.attributes).toMatchObject({ 'http.route': ROUTES.me, 'http.response.status_code': 200, [REQUEST_ID_ATTRIBUTE]: line.reqId });
      expect(line).toMatchObject({ trace_id: traceId, span_id: server!.spanId });

      // Its SQL in the same trace: the token's lookup with its placeholder, under the server span's tree.
      const statements = trace.filter((span) => span.scope === '@opentelemetry/instrumentation-pg' && span.kind === CLIENT && typeof span.attributes['db.query.text'] === 'string');
      expect(statements.map((span) => span.attributes['db.query.text'])).toEqual(expect.arrayContaining([expect.stringMatching(/token_hash = \$1/)]));
      const inTrace = new Set(trace.map((span) => span.spanId));
      for (const span of statements) expect(inTrace.has(span.parentSpanId!)).toBe(true);

      // No span of the whole run (sign-up, approval, device login, the CLI's request) holds a secret or a statement's values.
      const hash = sha256(token);
      const secrets = [token, hash.toString('hex'), hash.toString('base64'), hash.toString('base64url'), 'correct horse battery', start.deviceCode, start.userCode];
      const texts = attributeTexts(receiver.spans);
      expect(texts.length).toBeGreaterThan(100);
      expect(texts.filter(({ text }) => secrets.some((secret) => text.includes(secret)) || /bearer|cookie|csrf/i.test(text))).toEqual([]);
      const keys = receiver.spans.flatMap((span) => Object.keys(span.attributes));
      expect(keys.filter((key) => /header|values|parameter|statement/.test(key))).toEqual([]);
      // The approval page's query (?user_code=…) keeps the parameter's name, not its value.
      expect(receiver.spans.find((span) => span.attributes['url.path'] === '/device')?.attributes['url.query']).toBe('user_code=REDACTED');
    } finally {
      if (!stopped) await api.stop('SIGTERM');
    }
  });

  it('is off without OTEL_EXPORTER_OTLP_ENDPOINT: nothing is sent, no log line carries a trace', async () => {
    const before = receiver.spans.length;
    const api = await startApiProcess({ DATABASE_URL: database.url }, 60_000);
    try {
      const traceId = randomBytes(16).toString('hex');
      const res = await request(api.baseUrl, 'GET', ROUTES.me, { token: `prs_${'a'.repeat(43)}`, headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } });
      expect(res.status).toBe(401);
      const requestId = res.headers.get('x-request-id');
      expect(await eventually(() => logLines(api).some((line) => line.reqId === requestId), 5_000)).toBe(true);
      for (const line of logLines(api)) {
        expect(line).not.toHaveProperty('trace_id');
        expect(line).not.toHaveProperty('span_id');
      }
    } finally {
      expect(await api.stop('SIGTERM')).toBe(0);
    }
    expect(receiver.spans.length).toBe(before);
    expect(receiver.refused).toEqual([]);
  });

  it('exits within its grace when the collector does not answer', async () => {
    // A collector that accepts connections and never answers: the flush must not hold the exit past the grace.
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const api = await startApiProcess({ DATABASE_URL: database.url, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: '60000', SHUTDOWN_GRACE_SECONDS: '1' }, 60_000);
    try {
      expect((await request(api.baseUrl, 'GET', ROUTES.me)).status).toBe(401);
      const stopping = Date.now();
      expect(await api.stop('SIGTERM')).toBe(0);
      // The grace (1 s) and the process's own exit; generous for a loaded machine, far below the exporter's 10 s timeout.
      expect(Date.now() - stopping).toBeLessThan(scaledTimeout(1_000) + 3_000);
      expect(api.stdout()).toMatch(/traces: the last spans were not exported \(timed out\)/);
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });
});
