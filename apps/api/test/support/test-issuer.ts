import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/**
 * A CI's OIDC issuer, for real: discovery and a JWKS over HTTP on 127.0.0.1, tokens signed with
 * jose. `publish` decides which of its keys the JWKS lists (a rotation publishes a new one).
 */
export class TestIssuer {
  readonly keys = new Map<string, { privateKey: CryptoKey; jwk: JWK }>();
  published = new Set<string>();
  jwksFetches = 0;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer: this.url, jwks_uri: `${this.url}/jwks`, response_types_supported: ['id_token'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256', 'ES256'] }));
      } else if (req.url === '/jwks') {
        this.jwksFetches++;
        res.end(JSON.stringify({ keys: [...this.published].map((kid) => this.keys.get(kid)!.jwk) }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async addKey(kid: string, publish = true): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    this.keys.set(kid, { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } });
    if (publish) this.published.add(kid);
  }

  /** A token as GitHub Actions mints one: `iss`, `aud`, `sub`, `repository`, `ref`, a `jti`, five minutes. */
  sign(claims: Record<string, unknown>, options: { kid?: string; issuedAt?: Date; expiresAt?: Date } = {}): Promise<string> {
    const kid = options.kid ?? 'k1';
    const issuedAt = options.issuedAt ?? new Date();
    return new SignJWT({ jti: randomUUID(), repository: 'acme/api', ref: 'refs/heads/main', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
      .setIssuer(this.url)
      .setIssuedAt(issuedAt)
      .setExpirationTime(options.expiresAt ?? new Date(issuedAt.getTime() + 300_000))
      .sign(this.keys.get(kid)!.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
