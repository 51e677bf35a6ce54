// `npm run cli:install`: a `prospect` on the PATH from a clone of the repository.
//
// It builds the CLI (the contract library, then the esbuild bundle of build.mjs), packs it as
// the tarball a release publishes (`npm pack -w apps/cli`: every runtime dependency is inside
// the bundle, so the package has none to fetch but its optional one, @napi-rs/keyring, the OS
// keychain's native addon, which npm leaves out where it cannot fetch it), and installs that
// tarball globally, or under a prefix of your choosing:
//
//   npm run cli:install                            # npm's global prefix (`npm prefix -g`)
//   npm run cli:install -- --prefix ~/.local       # ~/.local/bin/prospect
//   npm_config_prefix=~/.local npm run cli:install # the same, as npm itself reads it
//   npm run cli:install -- --no-build              # pack what dist/ holds (tests, CI)
//
// (`npm run cli:install --prefix DIR`, without the `--`, is npm's own --prefix: npm would then
// look for the script in DIR.)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cliDir = join(root, 'apps', 'cli');
const { version } = JSON.parse(readFileSync(join(cliDir, 'package.json'), 'utf8'));

class InstallError extends Error {
  constructor(message, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

const USAGE = 'Usage: npm run cli:install [-- --prefix <dir>] [-- --no-build]';

/** The npm that runs this script (npm sets npm_execpath), so the same one packs and installs. */
function npm(args, capture = false) {
  const [command, first] = process.env.npm_execpath?.endsWith('.js') ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
  const run = spawnSync(command, [...first, ...args], {
    cwd: root,
    stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit',
    encoding: 'utf8',
    shell: command === 'npm' && process.platform === 'win32',
  });
  if (run.error) throw new InstallError(`npm ${args[0]} could not run: ${run.error.message}`);
  return run;
}

function node(args, what) {
  const run = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) throw new InstallError(`${what} failed (see above).`);
}

function main() {
  let options;
  try {
    ({ values: options } = parseArgs({
      options: { prefix: { type: 'string' }, 'no-build': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
    }));
  } catch (err) {
    throw new InstallError(`${err.message}\n${USAGE}`, 2);
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\nBuilds and packs apps/cli, then installs \`prospect\` globally (or under --prefix, or npm_config_prefix).\n`);
    return;
  }
  if (options.prefix !== undefined && !options.prefix.trim()) throw new InstallError(`--prefix needs a directory.\n${USAGE}`, 2);

  if (!options['no-build']) {
    process.stdout.write('Building the CLI…\n');
    node([createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc'), '-b', 'libs/contract'], 'Building libs/contract');
    node([join(cliDir, 'build.mjs')], 'Bundling apps/cli (build.mjs)');
  }

  const packDir = mkdtempSync(join(tmpdir(), 'prospect-cli-pack-'));
  try {
    // --ignore-scripts: prepack would build again; what to pack was built just above (or, with --no-build, on purpose not).
    const packed = npm(['pack', '-w', 'apps/cli', '--ignore-scripts', '--pack-destination', packDir, '--json'], true);
    if (packed.status !== 0) throw new InstallError('npm pack -w apps/cli failed (see above).');
    const [{ filename }] = JSON.parse(packed.stdout);

    const prefixArgs = options.prefix === undefined ? [] : ['--prefix', resolve(options.prefix)];
    const installed = npm(['install', '--global', '--no-audit', '--no-fund', ...prefixArgs, join(packDir, filename)]);
    if (installed.status !== 0) {
      throw new InstallError(
        'npm could not install the package there (see above). If the global prefix needs root, install under a directory of yours:\n' +
          '  npm run cli:install -- --prefix ~/.local   (then put ~/.local/bin on your PATH)',
      );
    }

    const prefix = npm(['prefix', '--global', ...prefixArgs], true).stdout.trim();
    const binDir = process.platform === 'win32' ? prefix : join(prefix, 'bin');
    const bin = join(binDir, process.platform === 'win32' ? 'prospect.cmd' : 'prospect');
    const check = spawnSync(bin, ['--version'], { encoding: 'utf8', shell: process.platform === 'win32' });
    const said = check.stdout?.trim();
    if (said !== version) throw new InstallError(`${bin} --version said ${JSON.stringify(said || check.error?.message || check.stderr)}, not ${version}.`);

    process.stdout.write(`\nInstalled prospect ${version}: ${bin}\n`);
    const onPath = (process.env.PATH ?? '').split(delimiter).some((dir) => dir && resolve(dir) === resolve(binDir));
    if (!onPath) process.stdout.write(`${binDir} is not on your PATH; add it to run \`prospect\`:\n  export PATH="${binDir}${delimiter}$PATH"\n`);
    // The server's port and address are its own (PORT, PUBLIC_URL): named only when the CLI's own variable says it.
    const apiUrl = process.env.PROSPECT_API_BASE_URL?.trim();
    process.stdout.write(
      apiUrl
        ? `Next: prospect auth:login   (on ${apiUrl}: PROSPECT_API_BASE_URL)\n`
        : 'Next: prospect auth:login --api-url <the server\'s URL>   (its banner prints the whole line: "Sign in the CLI")\n',
    );
  } finally {
    rmSync(packDir, { recursive: true, force: true });
  }
}

try {
  main();
} catch (err) {
  if (!(err instanceof InstallError)) throw err;
  process.stderr.write(`cli:install: ${err.message}\n`);
  process.exitCode = err.exitCode;
}
