import { ROUTES } from '@prospect/contract';
import supertest from 'supertest';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { authorizedPoll, createUser, deny, poll, startDeviceLogin } from '../support/fixtures.js';
import { eventually } from '../support/eventually.js';
import { client, get, post } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** One sample of the Prometheus text: `name{labels} value`, with the labels in the order given. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.slice(name.length).split(' ')[0]!;
    if (wanted.every((pair) => labelText.includes(pair))) return Number(line.split(' ').at(-1));
  }
  return undefined;
}

describe('metrics on METRICS_PORT', () => {
  let api: TestApp;
  let metricsUrl: string;
  beforeAll(async () => {
    api = await startTestApp({ env: { METRICS_PORT: '0', HOST: '127.0.0.1' } });
    metricsUrl = `http://127.0.0.1:${api.app.get(MetricsServer).port}`;
  });
  afterAll(() => api?.close());

  const scrape = async () => {
    const res = await supertest(metricsUrl).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text;
  };

  it('counts requests by route template and status, device logins, tokens, cache lookups; shows the pool, the listener and the process', async () => {
    const user = await createUser(api);
    const { accessToken } = (await authorizedPoll(api, user)).body;
    await Promise.all([get(api, ROUTES.me, accessToken), get(api, ROUTES.me, accessToken), get(api, ROUTES.me, 'prs_not-a-token')]);
    const denied = await startDeviceLogin(api);
    await deny(api, denied.userCode, user);
    await poll(api, denied.deviceCode);

    // A request is counted when its response's 'finish' fires, which may come just after the client
    // has read the answer: scrape until the last of them is in, then check every number.
    let text = '';
    await eventually(async () => {
      text = await scrape();
      return sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: ROUTES.me, status: '401' }) === 1 && (sample(text, 'http_requests_total', { method: 'POST', route: ROUTES.devicePoll, status: '200' }) ?? 0) >= 2;
    });
    expect(sample(text, 'http_requests_total', { method: 'GET', route: ROUTES.me, status: '200' })).toBe(2);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: ROUTES.me, status: '401' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'POST', route: ROUTES.devicePoll, status: '200' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: ROUTES.me, status: '200' })).toBe(2);
    expect(sample(text, 'prospect_device_logins_total', { event: 'started' })).toBe(2);
    expect(sample(text, 'prospect_device_logins_total', { event: 'approved' })).toBe(1);
    expect(sample(text, 'prospect_device_logins_total', { event: 'denied' })).toBe(1);
    expect(sample(text, 'prospect_device_logins_total', { event: 'redeemed' })).toBe(1);
    expect(sample(text, 'prospect_tokens_total', { event: 'issued' })).toBe(1);
    expect(sample(text, 'prospect_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    expect(sample(text, 'prospect_revocation_listener_connected')).toBe(1);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    if (api.database.kind === 'server') expect((sample(text, 'prospect_token_cache_lookups_total', { result: 'hit' }) ?? 0) + (sample(text, 'prospect_token_cache_lookups_total', { result: 'miss' }) ?? 0)).toBe(2);
  });

  it('labels an unknown path, of the API or of the pages, "unmatched", never by what the client typed', async () => {
    await get(api, '/api/no/such/route/12345');
    await get(api, '/no/such/page/67890');
    let text = '';
    await eventually(async () => (sample((text = await scrape()), 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }) ?? 0) >= 2);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(2);
    expect(text).not.toContain('67890');
    expect(text).not.toContain('12345');
  });

  it('counts rate-limit refusals by limit', async () => {
    const limited = await startTestApp({ env: { DEVICE_START_PER_IP_PER_MINUTE: '1', METRICS_PORT: '0', HOST: '127.0.0.1' } });
    try {
      const answers = await Promise.all([1, 2, 3].map(() => post(limited, ROUTES.deviceStart, {})));
      expect(answers.map((res) => res.status).sort()).toEqual([200, 429, 429]);
      let text = '';
      await eventually(async () => sample((text = (await supertest(`http://127.0.0.1:${limited.app.get(MetricsServer).port}`).get('/metrics')).text), 'prospect_rate_limit_refusals_total', { limit: 'start:ip' }) === 2);
      expect(sample(text, 'prospect_rate_limit_refusals_total', { limit: 'start:ip' })).toBe(2);
    } finally {
      await limited.close();
    }
  });

  it('is only on its own port: /metrics on the public port is a 404, other paths on the metrics port too', async () => {
    expect((await client(api).get('/metrics')).status).toBe(404);
    expect((await supertest(metricsUrl).get('/')).status).toBe(404);
  });
});
