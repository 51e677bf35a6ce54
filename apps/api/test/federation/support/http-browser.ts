import { csrfFrom } from '../../support/web-client.js';

/** One answer as the "browser" saw it. */
export interface BrowserResponse {
  status: number;
  url: URL;
  location?: URL;
  text: string;
}

/**
 * A browser without a screen, for the refusals where Chromium adds nothing: fetch with a cookie
 * jar per host (the API on 127.0.0.1, the provider on localhost, as two sites), redirects
 * followed one at a time so a test can see, stop at, or tamper with each hop.
 */
export class HttpBrowser {
  private readonly jar = new Map<string, Map<string, string>>();

  async request(url: URL | string, options: { method?: string; form?: Record<string, string> } = {}): Promise<BrowserResponse> {
    const target = new URL(url);
    const cookies = [...(this.jar.get(target.hostname) ?? new Map()).entries()].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await fetch(target, {
      method: options.method ?? (options.form ? 'POST' : 'GET'),
      redirect: 'manual',
      headers: {
        ...(cookies ? { cookie: cookies } : {}),
        ...(options.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        accept: 'text/html',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) HttpBrowser/1.0',
      },
      body: options.form ? new URLSearchParams(options.form).toString() : undefined,
    });
    this.keep(target.hostname, res.headers.getSetCookie());
    const location = res.headers.get('location');
    return { status: res.status, url: target, location: location ? new URL(location, target) : undefined, text: await res.text() };
  }

  /**
   * Requests `url` and follows its redirects until an answer that is not one, or until `stop`
   * says so of the next hop (which is then answered as it stands: its `location` is that hop).
   * `rewrite` may change a hop before it is followed (an attacker's or a broken provider's doing).
   */
  async follow(
    url: URL | string,
    options: { form?: Record<string, string>; stop?: (next: URL) => boolean; rewrite?: (next: URL) => URL } = {},
  ): Promise<BrowserResponse> {
    let res = await this.request(url, { form: options.form });
    for (let hops = 0; res.location && hops < 20; hops++) {
      const next = options.rewrite ? options.rewrite(res.location) : res.location;
      if (options.stop?.(next)) return { ...res, location: next };
      res = await this.request(next);
    }
    return res;
  }

  /** The value of a cookie this browser holds for `hostname`. */
  cookie(hostname: string, name: string): string | undefined {
    return this.jar.get(hostname)?.get(name);
  }

  /** Drops every cookie of `hostname` (signed out of that site, say). */
  forget(hostname: string): void {
    this.jar.delete(hostname);
  }

  /** The CSRF token of the first form on a page. */
  static csrfOf(html: string): string {
    const token = csrfFrom(html);
    if (!token) throw new Error(`no CSRF token in the page: ${html.slice(0, 300)}`);
    return token;
  }

  private keep(hostname: string, setCookies: string[]): void {
    const jar = this.jar.get(hostname) ?? new Map<string, string>();
    this.jar.set(hostname, jar);
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()));
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }
}
