/**
 * The built binary at its simplest: startup, usage errors and help, exit codes.
 * The built binary as a person or a script runs it (see ../support/run-cli.ts).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BUNDLE } from '../support/run-cli.js';
import { json } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

describe('startup', () => {
  it('whoami, logout and api do not load Ink or React: the binary holds neither, only an import() of the login screen and of the account picker', async () => {
    const binary = await readFile(BUNDLE, 'utf8');
    expect(binary).not.toMatch(/react\.(transitional\.)?element|useInput|yoga/);
    expect(binary).toContain('import("./login-screen.mjs")');
    expect(binary).toContain('import("./account-picker.mjs")');
  });
});

describe('usage', () => {
  it('prints help for every command and the version, exit 0', async () => {
    for (const command of ['auth:login', 'auth:whoami', 'auth:status', 'auth:switch', 'auth:refresh', 'auth:token', 'auth:logout', 'org:list', 'org:switch', 'api', 'events']) {
      for (const flag of ['--help', '-h']) {
        const run = await box.run([command, flag]);
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`$ prospect ${command}`);
      }
    }
    for (const args of [['--help'], [], ['help']]) {
      const help = await box.run(args);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/auth:login .*\n.*auth:whoami/);
    }
    const helpFor = await box.run(['help', 'auth:login']);
    expect(helpFor).toMatchObject({ code: 0, stderr: '' });
    expect(helpFor.stdout).toContain('$ prospect auth:login');
    for (const shell of ['bash', 'zsh', 'fish']) {
      const completion = await box.run(['completion', shell]);
      expect(completion.code).toBe(0);
      expect(completion.stdout).toContain('auth:whoami');
      expect(completion.stdout).toContain('--verify');
    }
    for (const args of [['completion', '--help'], ['completion', '-h'], ['help', 'completion']]) {
      const help = await box.run(args);
      expect(help).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toContain('$ prospect completion bash|zsh|fish');
      expect(help.stdout).toContain('eval "$(prospect completion bash)"');
    }
    expect(await box.run(['--version'])).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it('runs as `npx prospect` from the repository root, as the README and `npm start` say', async () => {
    const root = fileURLToPath(new URL('../../../..', import.meta.url));
    const { stdout } = await promisify(execFile)('npm', ['exec', '--offline', '--', 'prospect', '--version'], { cwd: root });
    expect(stdout).toBe('0.1.0\n');
  });

  it.each([
    [['nope'], /^Error: Unknown command: nope\nUsage: prospect <command> \[options\]; commands: auth:login, auth:whoami, auth:status, auth:switch, auth:refresh, auth:token, auth:logout, org:list, org:switch, api, events\n$/],
    [['auth:whomai'], /^Error: Unknown command: auth:whomai \(did you mean `prospect auth:whoami`\?\)\n/],
    [['auth:whoami', '--bogus'], /^Error: Unknown option for auth:whoami: --bogus\nUsage: prospect auth:whoami \[--verify\] \[--json\]/],
    [['auth:whoami', '--verfy'], /^Error: Unknown option for auth:whoami: --verfy \(did you mean --verify\?\)\n/],
    [['auth:whoami', 'extra'], /^Error: auth:whoami takes no arguments, not "extra"\nUsage: prospect auth:whoami/],
    [['completion', 'tcsh'], /^Error: Say which shell: `prospect completion bash`, `zsh` or `fish`\./],
    [['completion'], /^Error: Say which shell: `prospect completion bash`, `zsh` or `fish`\.\nUsage: prospect completion bash\|zsh\|fish/],
    // gh's spellings get the command meant here, with what followed them.
    [['auth', 'login'], /^Error: Unknown command: auth login\. Did you mean `prospect auth:login`\?\nCommands are written with a colon here: auth:login/],
    [['auth', 'status', '--verify'], /^Error: Unknown command: auth status\. Did you mean `prospect auth:status --verify`\?\n/],
    [['auth', 'login', '--api-url', 'https://x.example'], /Did you mean `prospect auth:login --api-url https:\/\/x\.example`\?/],
    [['whoami'], /^Error: Unknown command: whoami\. Did you mean `prospect auth:whoami`\?\n/],
    [['logout'], /^Error: Unknown command: logout\. Did you mean `prospect auth:logout`\?\n/],
    [['auth'], /^Error: `prospect auth` needs a command: auth:login, auth:whoami, auth:status, auth:switch, auth:refresh, auth:token, auth:logout\n/],
    [['help', 'nope'], /^Error: Unknown command: nope/],
    [['auth:login', '--timeout-seconds', 'soon'], /--timeout-seconds must be a whole number of seconds, got "soon"\.\nUsage: prospect auth:login/],
    [['auth:login', '--api-url', 'ftp://example.com'], /The backend must be an http\(s\) URL/],
    // A CI token file that is not there: one line, then the service account's usage, as its other usage errors.
    [
      ['auth:login', '--service-account', 'psa_nightly', '--federated-token', '/no/such/ci-token'],
      /^Error: Cannot read the CI token from \/no\/such\/ci-token \(no such file\): give a file that holds it, - to read it from stdin, or github inside GitHub Actions\.\nUsage: prospect auth:login --service-account <clientId> --federated-token <file\|-\|github> .*\n$/,
    ],
  ])('refuses %j with a usage line, exit 2', async (args, stderr) => {
    const run = await box.run(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(stderr);
    expect(run.stdout).toBe('');
  });
});
