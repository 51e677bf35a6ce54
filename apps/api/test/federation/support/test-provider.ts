import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

/** A person of the test provider's own directory. */
export interface ProviderUser {
  sub: string;
  email?: string;
  /** As the provider sends it: true, false, or left out (undefined). */
  email_verified?: boolean;
  name?: string;
  /** The methods of their sign-in (RFC 8176): `['pwd']` unless told; `['pwd', 'otp']` shows a second factor. */
  amr?: string[];
}

export const CLIENT_ID = 'prospect';
export const CLIENT_SECRET = 'a-client-secret-of-the-test-provider';

/**
 * A real OpenID provider for the tests: node-oidc-provider 9 on its own port (`http://localhost:…`,
 * another site than the API's 127.0.0.1, as a real provider is), with its own users and its own
 * sign-in page, which the tests drive (a form with a Username field, "Sign in" and "Cancel").
 * Consent is given at once. It issues refresh tokens; a user removed from `users` is a leaver:
 * a refresh of their tokens is invalid_grant ("referenced account not found").
 */
export class TestProvider {
  private constructor(
    readonly issuer: string,
    private readonly server: http.Server,
    readonly provider: Provider,
    /** Its directory: add people, change them, remove one (a leaver). */
    readonly users: Map<string, ProviderUser>,
  ) {}

  static async start(redirectUris: string[]): Promise<TestProvider> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://localhost:${(server.address() as AddressInfo).port}`;
    const users = new Map<string, ProviderUser>();
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const provider = new Provider(issuer, {
      jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'test', use: 'sig', alg: 'RS256' }] },
      ttl: { AccessToken: 3600, AuthorizationCode: 60, ClientCredentials: 600, DeviceCode: 600, Grant: 86400, IdToken: 3600, Interaction: 600, RefreshToken: 86400, Session: 86400 },
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: redirectUris, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }],
      findAccount: (_ctx, sub) => {
        const user = users.get(sub);
        if (!user) return undefined;
        return {
          accountId: sub,
          claims: () => {
            const claims: Record<string, unknown> = { sub };
            if (user.email !== undefined) claims.email = user.email;
            if (user.email_verified !== undefined) claims.email_verified = user.email_verified;
            if (user.name !== undefined) claims.name = user.name;
            return claims as { sub: string };
          },
        };
      },
      claims: { openid: ['sub', 'acr', 'amr'], email: ['email', 'email_verified'], profile: ['name'], auth_time: null, sid: null },
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      issueRefreshToken: async () => true,
      cookies: { keys: ['the test provider signs its cookies with this'] },
      renderError: (ctx, out) => {
        ctx.type = 'html';
        ctx.body = `<!doctype html><title>error</title><h1>${escape(String(out.error))}</h1><p>${escape(String(out.error_description ?? ''))}</p>`;
      },
    });
    const test = new TestProvider(issuer, server, provider, users);
    const callback = provider.callback();
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', issuer);
      const interaction = /^\/interaction\/([^/]+)(\/login|\/cancel)?$/.exec(url.pathname);
      if (!interaction) return callback(req, res);
      test.interact(req, res, interaction[2]).catch((err: Error) => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(err.message);
      });
    });
    return test;
  }

  /** The provider's own sign-in page, its answer, and consent given at once. */
  private async interact(req: http.IncomingMessage, res: http.ServerResponse, action: string | undefined): Promise<void> {
    const details = await this.provider.interactionDetails(req, res);
    if (action === '/cancel') {
      await this.provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The person cancelled.' }, { mergeWithLastSubmission: false });
      return;
    }
    if (action === '/login') {
      const form = new URLSearchParams(await body(req));
      const user = this.users.get(form.get('username') ?? '');
      if (!user) return this.loginPage(res, details.uid, 'No such user.');
      await this.provider.interactionFinished(req, res, { login: { accountId: user.sub, amr: user.amr ?? ['pwd'] } }, { mergeWithLastSubmission: false });
      return;
    }
    if (details.prompt.name === 'login') return this.loginPage(res, details.uid);
    // Consent: everything asked for, at once.
    const { params, session } = details;
    const grant = details.grantId ? await this.provider.Grant.find(details.grantId) : new this.provider.Grant({ accountId: session!.accountId, clientId: params.client_id as string });
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    if (missing.missingOIDCScope) grant!.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant!.addOIDCClaims(missing.missingOIDCClaims);
    const grantId = await grant!.save();
    await this.provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  private loginPage(res: http.ServerResponse, uid: string, error?: string): void {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><head><title>Test provider</title></head><body>
<h1>Sign in to the test provider</h1>${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${uid}/login"><label for="username">Username</label><input id="username" name="username"><button type="submit">Sign in</button></form>
<form method="post" action="/interaction/${uid}/cancel"><button type="submit">Cancel</button></form>
</body></html>`);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function body(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
