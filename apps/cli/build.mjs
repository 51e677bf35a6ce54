// Bundles the CLI into dist/ as ESM with code splitting: `whoami`, `logout` and
// `api` load one small file; Ink and React load only for the interactive login.
// Startup time is a feature (bench/cli-startup): see the two plugins below.
import { build } from 'esbuild';
import { readFile, rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';

/**
 * Node builtins through require(), not `import`: importing a builtin as an ES
 * module makes Node build a facade that reads every export, which runs lazy
 * getters — `node:process` loads the report module, `util` loads parse_args
 * and MIMEType — a few ms of startup for nothing. Through require() an export
 * is read only when the code uses it. (The banner defines `require`.)
 */
const builtinsViaRequire = {
  name: 'builtins-via-require',
  setup(b) {
    const builtins = new Set(builtinModules);
    b.onResolve({ filter: /^[a-z_/:]+$/ }, (args) => {
      // The require() inside the wrapper below is the real builtin.
      if (args.namespace === 'node-builtin') return { path: args.path, external: true };
      const name = args.path.replace(/^node:/, '');
      return builtins.has(name) ? { path: name, namespace: 'node-builtin' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => ({ contents: `module.exports = require('node:${args.path}');`, loader: 'js' }));
  },
};

/**
 * meow ships its dependencies pre-bundled in one file whose top level
 * eagerly initializes code meow only needs when it reads a package.json (we
 * pass `pkg`, so it never does): normalize-package-data with its SPDX tables,
 * lru-cache (which loads perf_hooks), @babel/code-frame, and an unused
 * `promisify(execFile)` that loads child_process, net and dgram. Together
 * about half of meow's import time. The same functions, initialized on first
 * use instead. Each replacement must match exactly, so a meow upgrade that
 * changes the file fails the build instead of silently undoing this.
 */
const meowLazyDependencies = {
  name: 'meow-lazy-dependencies',
  setup(b) {
    b.onLoad({ filter: /[\\/]meow[\\/]build[\\/]dependencies\.js$/ }, async (args) => {
      let source = await readFile(args.path, 'utf8');
      const replace = (from, to) => {
        if (source.split(from).length !== 2) throw new Error(`meow-lazy-dependencies: expected exactly one ${JSON.stringify(from)} in ${args.path}`);
        source = source.replace(from, to);
      };
      replace("import { execFile } from 'node:child_process';\n", '');
      replace('promisify(execFile);\n', '');
      replace('var libExports = requireLib$1();', 'var libExports = { codeFrameColumns: (...a) => requireLib$1().codeFrameColumns(...a) };');
      replace(
        'var normalizeExports = requireNormalize();\nconst normalizePackageData = getDefaultExportFromCjs(normalizeExports);',
        'const normalizePackageData = (...a) => getDefaultExportFromCjs(requireNormalize())(...a);',
      );
      return { contents: source, loader: 'js' };
    });
  },
};

await rm(new URL('./dist', import.meta.url), { recursive: true, force: true });
await build({
  absWorkingDir: new URL('.', import.meta.url).pathname,
  entryPoints: { prospect: 'src/main.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minify: true,
  sourcemap: 'linked',
  jsx: 'automatic',
  legalComments: 'none',
  // react-devtools-core is an optional peer of ink, only loaded with DEV=true.
  external: ['react-devtools-core'],
  plugins: [builtinsViaRequire, meowLazyDependencies],
  banner: {
    // Some bundled CommonJS dependencies call require(); give ESM one.
    js: "#!/usr/bin/env node\nimport { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
