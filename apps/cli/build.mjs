// Builds the `prospect` binary into dist/, in two bundles, for startup time
// (bench/cli-startup: `whoami` within 1.5× of `node -e 0`):
//
//  - dist/prospect.js — every command, CommonJS (dist/package.json says so).
//    A CommonJS entry skips Node's ES-module loader, about 8 ms of a ~100 ms
//    run; builtins are required without ES-module facades.
//  - dist/login-screen.mjs and dist/account-picker.mjs (+ chunks) — the Ink
//    views of `auth:login` and of choosing an account (`auth:switch`,
//    `auth:logout`), ES modules because Ink and yoga use top-level await.
//    Loaded with import() only when a person at a terminal needs one; each
//    takes everything it needs as arguments, so no class is shared between
//    the bundles.
import { build } from 'esbuild';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';

/**
 * meow ships its dependencies pre-bundled in one file, and half of it serves
 * reading and normalizing a package.json: normalize-package-data with SPDX
 * tables and semver, lru-cache (which loads perf_hooks), @babel/code-frame,
 * and a `promisify(execFile)` that loads child_process, net and dgram — all
 * initialized at import. We pass `pkg` and never read `cli.pkg`, so none of it
 * runs: replaced by stubs that throw, the rest is dropped from the bundle.
 * That halves meow's share of startup. Each replacement must match exactly
 * once, so a meow upgrade that changes the file fails the build instead of
 * silently undoing this.
 */
const meowWithoutPackageJson = {
  name: 'meow-without-package-json',
  setup(b) {
    b.onLoad({ filter: /[\\/]meow[\\/]build[\\/]dependencies\.js$/ }, async (args) => {
      let source = await readFile(args.path, 'utf8');
      const replace = (from, to) => {
        if (source.split(from).length !== 2) throw new Error(`meow-without-package-json: expected exactly one ${JSON.stringify(from)} in ${args.path}`);
        source = source.replace(from, to);
      };
      const unused = (what) => `() => { throw new Error('prospect: ${what} is not bundled (meow gets pkg, cli.pkg is never read)'); }`;
      replace("import { execFile } from 'node:child_process';\n", '');
      replace('promisify(execFile);\n', '');
      replace('var libExports = requireLib$1();', `var libExports = { codeFrameColumns: ${unused('@babel/code-frame')} };`);
      replace(
        'var normalizeExports = requireNormalize();\nconst normalizePackageData = getDefaultExportFromCjs(normalizeExports);',
        `const normalizePackageData = ${unused('normalize-package-data')};`,
      );
      replace('function readPackageUpSync(options) {', `const readPackageUpSync = ${unused('read-package-up')};\nfunction unusedReadPackageUpSync(options) {`);
      return { contents: source, loader: 'js' };
    });
  },
};

/** The Ink views stay out of the CommonJS bundle: each is an entry of the ES-module build. */
const inkViewsAreSeparate = {
  name: 'ink-views-are-separate',
  setup(b) {
    b.onResolve({ filter: /[\\/]ui[\\/](login-screen|account-picker)\.js$/ }, (args) => ({ path: `./${/(login-screen|account-picker)\.js$/.exec(args.path)[1]}.mjs`, external: true }));
  },
};

/**
 * undici (HTTP through HTTPS_PROXY/NO_PROXY, api-client/http-transport.ts) is a bundle of its
 * own, dist/undici.js, loaded at a command's first request: in the main bundle, its 300 kB would
 * be parsed by every run, including those that send nothing (`auth:whoami`, `--version`).
 */
const undiciIsSeparate = {
  name: 'undici-is-separate',
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, () => ({ path: './undici.js', external: true }));
  },
};

/**
 * @napi-rs/keyring (the OS keychain, session/keychain.ts) is a native addon: its .node binary,
 * one per platform in a package of its own, cannot be bundled. It stays a require() of the
 * installed package (an optional dependency of @prospect/cli), reached by import() only when a
 * session is kept in the keychain: the default, the session file, never loads a native module.
 */
const keyringIsInstalled = {
  name: 'keyring-is-installed',
  setup(b) {
    b.onResolve({ filter: /^@napi-rs\/keyring$/ }, (args) => ({ path: args.path, external: true }));
  },
};

const common = {
  absWorkingDir: new URL('.', import.meta.url).pathname,
  bundle: true,
  platform: 'node',
  target: 'node20',
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
};

await rm(new URL('./dist', import.meta.url), { recursive: true, force: true });
await mkdir(new URL('./dist', import.meta.url));
await writeFile(new URL('./dist/package.json', import.meta.url), '{ "type": "commonjs" }\n');

await build({
  ...common,
  entryPoints: ['src/main.ts'],
  outfile: 'dist/prospect.js',
  format: 'cjs',
  plugins: [meowWithoutPackageJson, inkViewsAreSeparate, undiciIsSeparate, keyringIsInstalled],
  // meow reads import.meta.url; this is its CommonJS equivalent.
  define: { 'import.meta.url': '__importMetaUrl' },
  banner: { js: "#!/usr/bin/env node\nconst __importMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
});

await build({
  ...common,
  entryPoints: { 'login-screen': 'src/ui/login-screen.tsx', 'account-picker': 'src/ui/account-picker.tsx' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  format: 'esm',
  splitting: true,
  jsx: 'automatic',
  // react-devtools-core is an optional peer of ink, only loaded with DEV=true.
  external: ['react-devtools-core'],
  // Some bundled CommonJS dependencies of Ink call require(); give the ES module one.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
});

await build({
  ...common,
  entryPoints: { undici: 'undici' },
  outdir: 'dist',
  format: 'cjs',
});

// bin/prospect.cjs loads it; executable too, so `./dist/prospect.js` runs directly.
await chmod(new URL('./dist/prospect.js', import.meta.url), 0o755);
