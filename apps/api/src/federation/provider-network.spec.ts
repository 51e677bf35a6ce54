import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { addressKind, checkedAddresses, ProviderAddressRefused, providerFetch, type Resolve } from './provider-network.js';

/**
 * The address rules of requests to identity providers (issue #43, finding 8). Host names resolve
 * through a fake resolver (DNS is outside the system); connections are real, to a server on
 * loopback.
 */
describe('provider network rules', () => {
  it('tells loopback, private and link-local, and public addresses apart, IPv4-mapped ones as their IPv4', () => {
    const kinds = Object.fromEntries(
      ['127.0.0.1', '127.8.9.10', '::1', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.0.1', '100.64.0.1', '100.127.255.254', '169.254.169.254', '0.0.0.0', '::', 'fd00::1', 'fc00::1', 'fe80::1', '::ffff:10.0.0.1', '::ffff:127.0.0.1', '172.32.0.1', '100.128.0.1', '8.8.8.8', '2001:4860:4860::8888', '192.0.2.2'].map((a) => [a, addressKind(a)]),
    );
    expect(kinds).toEqual({
      '127.0.0.1': 'loopback',
      '127.8.9.10': 'loopback',
      '::1': 'loopback',
      '10.0.0.1': 'private',
      '172.16.0.1': 'private',
      '172.31.255.255': 'private',
      '192.168.0.1': 'private',
      '100.64.0.1': 'private',
      '100.127.255.254': 'private',
      '169.254.169.254': 'private',
      '0.0.0.0': 'private',
      '::': 'private',
      'fd00::1': 'private',
      'fc00::1': 'private',
      'fe80::1': 'private',
      '::ffff:10.0.0.1': 'private',
      '::ffff:127.0.0.1': 'loopback',
      '172.32.0.1': 'public',
      '100.128.0.1': 'public',
      '8.8.8.8': 'public',
      '2001:4860:4860::8888': 'public',
      '192.0.2.2': 'public',
    });
  });

  const dns = (answers: Record<string, string[]>): Resolve => async (hostname) => (answers[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it('checks every address a host name resolves to, and allows private ones only when told', async () => {
    const resolve = dns({ 'intranet.example': ['10.1.2.3'], 'split.example': ['93.184.216.34', '10.0.0.1'], 'public.example': ['93.184.216.34'], 'local.example': ['127.0.0.1'] });
    await expect(checkedAddresses('intranet.example', { private: false, loopback: true }, resolve)).rejects.toThrow(/intranet\.example \(10\.1\.2\.3\) is a private or link-local address/);
    await expect(checkedAddresses('split.example', { private: false, loopback: true }, resolve)).rejects.toBeInstanceOf(ProviderAddressRefused);
    await expect(checkedAddresses('[fd00::1]', { private: false, loopback: true }, resolve)).rejects.toBeInstanceOf(ProviderAddressRefused);
    expect(await checkedAddresses('public.example', { private: false, loopback: true }, resolve)).toEqual([{ address: '93.184.216.34', family: 4 }]);
    expect(await checkedAddresses('local.example', { private: false, loopback: true }, resolve)).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(await checkedAddresses('intranet.example', { private: true, loopback: true }, resolve)).toEqual([{ address: '10.1.2.3', family: 4 }]);
    expect(await checkedAddresses('split.example', { private: true, loopback: true }, resolve)).toHaveLength(2);
    // The token exchange's issuers: loopback too is refused, unless TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS; private ones answer to their own setting.
    await expect(checkedAddresses('local.example', { private: true, loopback: false }, resolve)).rejects.toThrow(/local\.example \(127\.0\.0\.1\) is a loopback address.*TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS=true/);
    await expect(checkedAddresses('[::1]', { private: false, loopback: false }, resolve)).rejects.toBeInstanceOf(ProviderAddressRefused);
    for (const host of ['0.0.0.0', '[::]', '[::ffff:0.0.0.0]']) await expect(checkedAddresses(host, { private: true, loopback: false }, resolve)).rejects.toThrow(/is a loopback address/);
    await expect(checkedAddresses('intranet.example', { private: false, loopback: true }, resolve)).rejects.toThrow(/private or link-local/);
  });

  describe('fetch', () => {
    let server: http.Server;
    let port: number;
    let connections = 0;
    beforeAll(async () => {
      server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
      server.on('connection', () => (connections += 1));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    const rules = { allowPrivate: () => false, ownUrl: () => 'https://prospect.example.com' };
    const get = (fetch: ReturnType<typeof providerFetch>, url: string) => fetch(url, { method: 'GET', headers: { accept: 'application/json' }, body: undefined, redirect: 'manual' });

    it('connects to the address it checked: a name that resolves elsewhere the second time (DNS rebinding) is asked once', async () => {
      let asked = 0;
      // First a loopback answer (allowed), then a private one: a second resolution at connect time would reach it.
      const rebinding: Resolve = async () => [{ address: asked++ === 0 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
      const res = await get(providerFetch(rules, rebinding), `http://rebinding.example:${port}/.well-known/openid-configuration`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true });
      expect(asked).toBe(1);
    });

    it('refuses a private address, and Prospect itself, before connecting', async () => {
      const before = connections;
      const toPrivate = providerFetch(rules, dns({ 'intranet.example': ['10.0.0.1'] }));
      await expect(get(toPrivate, `http://intranet.example:${port}/`)).rejects.toBeInstanceOf(ProviderAddressRefused);
      await expect(get(toPrivate, 'https://169.254.169.254/latest/meta-data/')).rejects.toBeInstanceOf(ProviderAddressRefused);
      const itself = providerFetch({ ...rules, ownUrl: () => `http://127.0.0.1:${port}` }, dns({}));
      await expect(get(itself, `http://localhost:${port}/.well-known/openid-configuration`)).rejects.toThrow(/is this Prospect server itself/);
      await expect(get(itself, `http://[::1]:${port}/`)).rejects.toThrow(/is this Prospect server itself/);
      expect(connections).toBe(before);
    });
  });
});
