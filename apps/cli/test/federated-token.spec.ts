/**
 * Where `auth:login --federated-token` gets the CI's token (issue #45): a file, stdin, or GitHub
 * Actions' token service, here a real node:http server standing in for GitHub (it is outside
 * the system).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CliError, EXIT } from '../src/errors.js';
import { type FederatedTokenContext, parseFederatedTokenFlag, readFederatedToken } from '../src/workload-identity/federated-token.js';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmFjbWUvYXBwIn0.c2lnbmF0dXJl';

const stdinOf = (text: string, isTTY = false) => Object.assign(Readable.from([text]), { isTTY }) as unknown as NodeJS.ReadStream;
const context = (env: NodeJS.ProcessEnv = {}, stdin = stdinOf('')): FederatedTokenContext => ({ env, stdin, fetch, signal: new AbortController().signal });
const noAudience = async () => {
  throw new Error('the audience is only asked for by github');
};

async function failure(promise: Promise<unknown>): Promise<CliError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('--federated-token', () => {
  it('names a file, stdin (-) or github', () => {
    expect(parseFederatedTokenFlag('-')).toEqual({ kind: 'stdin' });
    expect(parseFederatedTokenFlag('github')).toEqual({ kind: 'github' });
    expect(parseFederatedTokenFlag('./ci-token')).toEqual({ kind: 'file', path: './ci-token' });
    expect(() => parseFederatedTokenFlag('')).toThrow(/--federated-token needs where the CI token is/);
    expect(() => parseFederatedTokenFlag(true)).toThrow(/--federated-token needs/);
  });

  describe('from a file', () => {
    let dir: string;
    beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'prospect-ci-token-'))));
    afterEach(() => rm(dir, { recursive: true, force: true }));

    it('reads the token, trimmed of the newline the CI wrote after it', async () => {
      await writeFile(join(dir, 'token'), `${JWT}\n`);
      expect(await readFederatedToken({ kind: 'file', path: join(dir, 'token') }, context(), noAudience)).toBe(JWT);
    });

    it('says in one line that the file is missing, a directory, empty or not a JWT', async () => {
      const missing = await failure(readFederatedToken({ kind: 'file', path: join(dir, 'nope') }, context(), noAudience));
      expect(missing.message).toBe(`Cannot read the CI token from ${join(dir, 'nope')} (no such file): give a file that holds it, - to read it from stdin, or github inside GitHub Actions.`);
      expect(missing.exitCode).toBe(EXIT.usage);
      expect((await failure(readFederatedToken({ kind: 'file', path: dir }, context(), noAudience))).message).toMatch(/it is a directory/);
      await writeFile(join(dir, 'empty'), '\n');
      expect((await failure(readFederatedToken({ kind: 'file', path: join(dir, 'empty') }, context(), noAudience))).message).toMatch(/it is empty/);
      await writeFile(join(dir, 'secret'), 'prsa_not-a-jwt');
      const notJwt = await failure(readFederatedToken({ kind: 'file', path: join(dir, 'secret') }, context(), noAudience));
      expect(notJwt.message).toMatch(/is not a JWT/);
      expect(notJwt.message).not.toContain('prsa_not-a-jwt');
    });
  });

  describe('from stdin', () => {
    it('reads what is piped in', async () => {
      expect(await readFederatedToken({ kind: 'stdin' }, context({}, stdinOf(`  ${JWT}\n`)), noAudience)).toBe(JWT);
    });

    it('refuses a terminal: a CI token is piped, never typed', async () => {
      const err = await failure(readFederatedToken({ kind: 'stdin' }, context({}, stdinOf('', true)), noAudience));
      expect(err.message).toMatch(/stdin, which is a terminal here: pipe it in/);
    });
  });

  describe('from GitHub Actions', () => {
    let github: Server;
    let url: string;
    const seen: IncomingMessage[] = [];
    let answer: { status: number; body: unknown } = { status: 200, body: { value: JWT } };
    beforeAll(async () => {
      github = createServer((req, res) => {
        seen.push(req);
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      });
      await new Promise<void>((resolve) => github.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(github.address() as AddressInfo).port}/_apis/distributedtask/token?api-version=2.0`;
    });
    afterAll(() => new Promise((resolve) => github.close(resolve)));
    beforeEach(() => {
      seen.length = 0;
      answer = { status: 200, body: { value: JWT } };
    });
    const env = () => ({ ACTIONS_ID_TOKEN_REQUEST_URL: url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'gh-request-token' });

    it('asks the token service for the audience, with its bearer token, and takes {value}', async () => {
      expect(await readFederatedToken({ kind: 'github' }, context(env()), async () => 'https://prospect.example')).toBe(JWT);
      expect(seen).toHaveLength(1);
      const asked = new URL(seen[0]!.url!, 'http://x');
      expect(asked.searchParams.get('api-version')).toBe('2.0');
      expect(asked.searchParams.get('audience')).toBe('https://prospect.example');
      expect(seen[0]!.headers.authorization).toBe('bearer gh-request-token');
    });

    it('without the job’s id-token permission, names the fix before asking anyone anything', async () => {
      let asked = false;
      const err = await failure(
        readFederatedToken({ kind: 'github' }, context({ ACTIONS_ID_TOKEN_REQUEST_URL: url }), async () => {
          asked = true;
          return 'aud';
        }),
      );
      expect(err.message).toBe('ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set: this job cannot ask GitHub Actions for an OIDC token.');
      expect(err.hint).toMatch(/`permissions: id-token: write`/);
      expect((await failure(readFederatedToken({ kind: 'github' }, context({}), noAudience))).message).toMatch(/^ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set/);
      expect(asked).toBe(false);
      expect(seen).toHaveLength(0);
    });

    it('says in one line what the token service refused, and an answer without a token', async () => {
      answer = { status: 403, body: { message: 'Resource not accessible by integration\n\u001b[31m' } };
      const refused = await failure(readFederatedToken({ kind: 'github' }, context(env()), async () => 'aud'));
      expect(refused.message).toBe("GitHub Actions' token service refused to mint an OIDC token (HTTP 403: Resource not accessible by integration).");
      answer = { status: 200, body: { count: 0 } };
      expect((await failure(readFederatedToken({ kind: 'github' }, context(env()), async () => 'aud'))).message).toMatch(/answered without a token/);
    });
  });
});
