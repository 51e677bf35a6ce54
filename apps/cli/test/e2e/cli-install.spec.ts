/**
 * `npm run cli:install` (issue #36, item 1): the CLI packed as the tarball a release publishes
 * (`npm pack -w apps/cli`) and installed under a prefix, then run as a person would, from a
 * directory outside the repository: `prospect --version`, `prospect auth:login --help`, the
 * login screen's bundle, and a hint the CLI prints, pasted into a shell.
 *
 * It packs what `npm run build` left in dist/ (`--no-build`): rebuilding here would rewrite
 * dist/ under the other test files that run the binary meanwhile. The registry is an address
 * where nothing answers, so the install proves the tarball needs nothing from it. Its one optional
 * dependency, @napi-rs/keyring (the OS keychain, a native addon that cannot be bundled), is then
 * left out, as npm leaves out an optional dependency it cannot fetch: the CLI works without it,
 * and says so when asked to use the keychain.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertBuilt, type CliRun, runToEnd } from '../support/run-cli.js';
import { fakeBackend, json, user } from '../support/fake-backend.js';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

let root: string;
let outside: string;

beforeAll(assertBuilt);
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'prospect-cli-install-'));
  outside = join(root, 'somewhere-else');
  await mkdir(outside);
});
afterEach(() => rm(root, { recursive: true, force: true }));

/**
 * A command with a clean environment: none of the npm_* variables of an `npm test` around this
 * one (npm_config_local_prefix would point a nested npm at apps/cli), a HOME and a config
 * directory of its own, and a registry that cannot be reached (at once: npm would retry for minutes).
 */
function run(command: string, args: string[], options: { cwd: string; env?: Record<string, string>; stdin?: string }): Promise<CliRun> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && !name.startsWith('PROSPECT_'))) as Record<string, string>;
  return runToEnd(command, args, { cwd: options.cwd, env: { ...env, HOME: root, CI: 'true', PROSPECT_CONFIG_DIR: join(root, 'config'), npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0', npm_config_update_notifier: 'false', ...options.env }, stdin: options.stdin });
}

const cliInstall = (args: string[], env: Record<string, string> = {}) => run('npm', ['run', 'cli:install', '--', '--no-build', ...args], { cwd: REPO_ROOT, env });

it('installs a self-contained tarball under --prefix, and `prospect` runs from anywhere', async () => {
  const prefix = join(root, 'prefix');
  const { version } = JSON.parse(await readFile(join(REPO_ROOT, 'apps/cli/package.json'), 'utf8'));
  const install = await cliInstall(['--prefix', prefix]);
  expect({ code: install.code, stderr: install.stderr }).toMatchObject({ code: 0 });
  const bin = join(prefix, 'bin', 'prospect');
  expect(install.stdout).toContain(`Installed prospect ${version}: ${bin}\n`);
  expect(install.stdout).toContain(`${join(prefix, 'bin')} is not on your PATH`);
  // No port it cannot know (the server's PORT is the server's): the banner's line.
  expect(install.stdout).toMatch(/\nNext: prospect auth:login --api-url <the server's URL> {3}\(its banner prints the whole line: "Sign in the CLI"\)\n$/);

  // What was installed is the package as published: bin and the bundles, no dependency but the
  // optional native keychain (not fetched from this registry), no source map.
  const installed = join(prefix, 'lib', 'node_modules', '@prospect', 'cli');
  const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
  expect(manifest).toMatchObject({ name: '@prospect/cli', version, bin: { prospect: 'bin/prospect.cjs' }, engines: { node: expect.any(String) } });
  expect(manifest.dependencies).toBeUndefined();
  expect(manifest.optionalDependencies).toEqual({ '@napi-rs/keyring': expect.any(String) });
  expect(existsSync(join(installed, 'node_modules'))).toBe(false);
  expect(existsSync(join(installed, 'dist', 'prospect.js.map'))).toBe(false);

  expect(await run(bin, ['--version'], { cwd: outside })).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
  const onPath = { PATH: `${join(prefix, 'bin')}${delimiter}${process.env.PATH}` };
  const help = await run('prospect', ['auth:login', '--help'], { cwd: outside, env: onPath });
  expect(help).toMatchObject({ code: 0, stderr: '' });
  expect(help.stdout).toContain('$ prospect auth:login');

  // The login screen and the account picker (Ink, React, yoga) are bundles of their own, loaded only at a terminal: they load from the install too.
  const screen = await run(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(join(installed, 'dist', 'login-screen.mjs'))}); console.log(typeof m.runLoginScreen)`], { cwd: outside });
  expect(screen).toMatchObject({ code: 0, stdout: 'function\n', stderr: '' });
  const picker = await run(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(join(installed, 'dist', 'account-picker.mjs'))}); console.log(typeof m.runAccountPicker)`], { cwd: outside });
  expect(picker).toMatchObject({ code: 0, stdout: 'function\n', stderr: '' });

  // A hint the CLI prints is a command that runs, pasted into a shell as it is.
  const backend = await fakeBackend({
    'GET /api/cli/auth/me': (req, _b, res) =>
      req.headers.authorization === 'Bearer prs_pasted' ? json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' }) : json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'No.' }),
  });
  try {
    const whoami = await run('prospect', ['auth:whoami', '--api-url', backend.url], { cwd: outside, env: onPath });
    expect(whoami.code).toBe(4);
    const hint = /run `(prospect [^`]+)`/.exec(whoami.stderr)?.[1];
    expect(hint).toBe(`prospect auth:login --api-url ${backend.url}`);
    const login = await run('/bin/sh', ['-c', `${hint} --token -`], { cwd: outside, env: onPath, stdin: 'prs_pasted\n' });
    expect(login).toMatchObject({ code: 0, stdout: `Logged in as ${user.name} <${user.email}> on ${backend.url}.\n` });

    // Without its optional keychain package, --secure-storage says so and how to get it, and keeps the file.
    const secure = await run('prospect', ['auth:login', '--api-url', backend.url, '--token', 'prs_pasted', '--secure-storage'], { cwd: outside, env: onPath });
    expect(secure).toMatchObject({ code: 0, stdout: `Logged in as ${user.name} <${user.email}> on ${backend.url}.\n` });
    expect(secure.stderr).toMatch(/^The OS keychain cannot be used: its support, the optional package @napi-rs\/keyring, is not installed with prospect \(.*\)\.\nThe tokens are saved in the session file instead, readable by you only\.\nTo use the keychain: install prospect again with its optional dependencies \(npm install without --omit=optional\), then log in with --secure-storage\.\n/);
  } finally {
    await backend.close();
  }
});

it('installs into npm_config_prefix when it is set, as npm itself would', async () => {
  const prefix = join(root, 'from-env');
  const install = await cliInstall([], { npm_config_prefix: prefix, PROSPECT_API_BASE_URL: 'http://127.0.0.1:3917' });
  expect(install.code).toBe(0);
  // The CLI's own variable names the server: then the line needs no --api-url.
  expect(install.stdout).toMatch(/\nNext: prospect auth:login {3}\(on http:\/\/127\.0\.0\.1:3917: PROSPECT_API_BASE_URL\)\n$/);
  expect((await run(join(prefix, 'bin', 'prospect'), ['--version'], { cwd: outside })).code).toBe(0);
});

it('refuses an unknown option with its usage, exit 2, installing nothing', async () => {
  const install = await run('npm', ['run', 'cli:install', '--', '--prefx', join(root, 'p')], { cwd: REPO_ROOT });
  expect(install.code).toBe(2);
  expect(install.stderr).toContain('Usage: npm run cli:install [-- --prefix <dir>] [-- --no-build]');
  expect(existsSync(join(root, 'p'))).toBe(false);
});
