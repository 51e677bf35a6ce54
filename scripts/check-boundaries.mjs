#!/usr/bin/env node
/**
 * The house rules, checked (npm run check:boundaries; part of npm test):
 *  1. imports follow the module map (apps/api/module-map.json) and make no loop: dependency-cruiser
 *     with the rules of .dependency-cruiser.cjs, over the API and the CLI;
 *  2. table ownership, from parsed SQL (sql-statements.mjs: every statement the API sends, read
 *     from the TypeScript syntax tree and parsed by Postgres's own parser, libpg-query): each
 *     table is written and locked (FOR UPDATE/SHARE) by its owner module only (module-map.json
 *     `tables`; `locks` lists the reviewed exceptions), and another module's table is read only
 *     where the module's `reads` lists it; names compare as Postgres reads them (`update users`,
 *     `public.users`, `"users"` are one table; a CTE's name is none); a statement the checker
 *     cannot read is a problem unless `// sql-opaque: <why>` stands above its call. SQL lives only
 *     in *.repository.ts, database/ and the migrations, or in a `*.sql-fragment.ts` (SQL text a
 *     module lends the repositories of others to embed, as audit/ lends the INSERT of an event:
 *     its text is its owner's, so a table it names counts as the owner's, and only repositories
 *     may import it);
 *  3. docs/architecture.md shows the map as it is (`--write` regenerates that table);
 *  4. a module lends the others its services, never its repositories (a Nest module's `exports`);
 *  5. tests (apps/api/test, apps/cli/test, and the *.spec.ts files of apps/api/src) arrange and read data
 *     through the app's services or the named fixtures of a `support/` folder: SQL written in a
 *     spec says why it must be SQL (what is stored at rest, a schema, a fault injected) in a
 *     `// sql-on-purpose: …` comment just above it.
 * Prints one line per problem and exits 1 if there is any.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFragment, loadParser, OPAQUE, statementsOf } from './sql-statements.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const API_SRC = join(ROOT, 'apps/api/src');
const TEST_DIRS = ['apps/api/test', 'apps/cli/test'].map((dir) => join(ROOT, dir));
const ARCHITECTURE = join(ROOT, 'docs/architecture.md');
const { modules } = JSON.parse(readFileSync(join(ROOT, 'apps/api/module-map.json'), 'utf8'));

/** An import of a module's SQL fragment (`*.sql-fragment.ts`). */
const FRAGMENT_IMPORT = /\bfrom\s+['"][^'"]*\.sql-fragment\.js['"]/;

/** A query given its SQL text inline: `.query(\`SELECT …`, `.query<Row>('UPDATE …'`. */
const INLINE_SQL = /\.query\s*(?:<[^>]*>)?\(\s*[`'"]/g;
const ON_PURPOSE = '// sql-on-purpose:';
/** Nest's `exports: [...]` of a module. */
const MODULE_EXPORTS = /\bexports:\s*\[([^\]]*)\]/;

/** The API's TypeScript files, migrations left out; `specs` picks its `*.spec.ts` files instead of the others. */
function sourceFiles(dir, specs = false) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sourceFiles(path, specs);
    return entry.name.endsWith('.ts') && entry.name.endsWith('.spec.ts') === specs ? [path] : [];
  });
}

const KINDS = { write: 'writes', lock: 'locks (FOR UPDATE/SHARE)' };
/** Problems by file, then line. */
const byLine = (a, b) => a.localeCompare(b, 'en', { numeric: true });

/**
 * Which module writes, locks and reads which table, from every statement parsed
 * (sql-statements.mjs), and where SQL sits outside repositories.
 * `sources`: each file's path under apps/api/src ('tokens/x.repository.ts') and its text (specs
 * go to checkTestSql instead). A module writes and locks only the tables its entry of the map
 * lists, and reads another module's table only if its `reads` lists it; a table a
 * `*.sql-fragment.ts` helper names counts as the fragment's module's.
 */
export async function checkStatements(sources, map = modules) {
  await loadParser();
  const owner = new Map(Object.entries(map).flatMap(([name, { tables }]) => tables.map((table) => [table, name])));
  const fragments = new Map(
    sources.filter(({ path }) => path.endsWith('.sql-fragment.ts')).map(({ path, text }) => [path, { module: path.split('/')[0], exports: loadFragment(text) }]),
  );
  const problems = [];
  for (const { path, text } of sources) {
    const module = path.includes('/') ? path.split('/')[0] : '';
    const at = (line) => `apps/api/src/${path}:${line}`;
    const { statements, unreadable, sqlCalls } = statementsOf(path, text, fragments);
    const repository = path.endsWith('.repository.ts');
    const sqlHome = repository || path.endsWith('.sql-fragment.ts') || module === 'database';
    if (!sqlHome && (statements.length || sqlCalls.length)) {
      // Its tables are judged once it lives in a repository.
      const line = Math.min(...statements.map((s) => s.line), ...sqlCalls);
      problems.push(`${at(line)}: SQL outside a repository (*.repository.ts, database/ or migrations/)`);
    } else {
      for (const { line, why } of unreadable) {
        problems.push(`${at(line)}: SQL the checker cannot read: ${why} (make it a constant text, or say why above the call: ${OPAQUE} …)`);
      }
      for (const { table, kind, module: by, line } of statements.flatMap((s) => s.tables)) {
        const tableOwner = owner.get(table);
        if (kind !== 'read' && !tableOwner) {
          problems.push(`${at(line)}: ${KINDS[kind]} ${table}, which no module owns (apps/api/module-map.json)`);
        } else if (kind === 'write' && tableOwner !== by) {
          problems.push(`${at(line)}: writes ${table}, which ${tableOwner}/ owns`);
        } else if (kind === 'lock' && tableOwner !== by && !(map[by]?.locks ?? []).includes(table)) {
          problems.push(`${at(line)}: locks (FOR UPDATE/SHARE) ${table}, which ${tableOwner}/ owns: only its owner locks it`);
        } else if (kind === 'read' && tableOwner && tableOwner !== by && !(map[by]?.reads ?? []).includes(table)) {
          problems.push(`${at(line)}: reads ${table}, which ${tableOwner}/ owns: not in ${by || 'this file'}'s reads (apps/api/module-map.json)`);
        }
      }
    }
    if (!repository && FRAGMENT_IMPORT.test(text)) {
      const line = text.slice(0, text.search(FRAGMENT_IMPORT)).split('\n').length;
      problems.push(`${at(line)}: imports a SQL fragment, which only a repository embeds`);
    }
  }
  return [...new Set(problems)].sort(byLine);
}

/** Repositories a module lends others (`sources` as for checkStatements): each table's statements stay behind its owner's services. */
export function checkModuleExports(sources) {
  const problems = [];
  for (const { path, text } of sources) {
    const exported = path.endsWith('.module.ts') ? MODULE_EXPORTS.exec(text) : null;
    if (!exported) continue;
    const line = text.slice(0, exported.index).split('\n').length;
    for (const name of exported[1].split(',').map((n) => n.trim()).filter((n) => n.endsWith('Repository'))) {
      problems.push(`apps/api/src/${path}:${line}: exports ${name}: a module lends the others a service, not its repository`);
    }
  }
  return problems;
}

/** SQL written in a spec without a reason (`specs`: each test file's path from the repository's root and its text; support/ files are the fixtures and are not given). */
export function checkTestSql(specs) {
  const problems = [];
  for (const { path, text } of specs) {
    const lines = text.split('\n');
    for (const match of text.matchAll(INLINE_SQL)) {
      const line = text.slice(0, match.index).split('\n').length;
      if (!lines.slice(Math.max(0, line - 4), line).some((l) => l.includes(ON_PURPOSE))) {
        problems.push(`${path}:${line}: SQL in a test: arrange or read through a service or a fixture in support/, or say why above it (${ON_PURPOSE} …)`);
      }
    }
  }
  return problems;
}

/** Test files, support/ folders left out. */
function specFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'support' || entry.name === 'node_modules' ? [] : specFiles(path);
    return /\.(e2e-)?spec\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** The module table of docs/architecture.md, generated from the map. */
export function mapTable(map = modules) {
  const code = (names) => names.map((t) => `\`${t}\``).join(', ') || '—';
  const rows = Object.entries(map).map(
    ([name, { tables, reads = [], locks = [], uses }]) =>
      `| \`${name}/\` | ${code(tables)} | ${code(reads)}${locks.length ? ` (locks ${code(locks)})` : ''} | ${uses.join(', ') || 'nothing of the others'} |`,
  );
  return ['| module | writes and locks (alone) | reads of others\' tables | may import |', '|---|---|---|---|', ...rows].join('\n');
}

const START = '<!-- module-map:start (generated from apps/api/module-map.json: npm run check:boundaries -- --write) -->';
const END = '<!-- module-map:end -->';

function checkArchitectureDoc(write) {
  const doc = readFileSync(ARCHITECTURE, 'utf8');
  const at = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (at < 0 || end < at) return [`docs/architecture.md: no generated module table (${START} … ${END})`];
  const current = doc.slice(at + START.length, end).trim();
  if (current === mapTable()) return [];
  if (write) {
    writeFileSync(ARCHITECTURE, `${doc.slice(0, at + START.length)}\n${mapTable()}\n${doc.slice(end)}`);
    return [];
  }
  return ['docs/architecture.md: the module table differs from apps/api/module-map.json (npm run check:boundaries -- --write)'];
}

/** dependency-cruiser with .dependency-cruiser.cjs over `dirs` of `root` (a copy of the layout, in a test). */
export async function checkImports(root = ROOT, dirs = ['apps/api/src', 'apps/cli/src']) {
  const { cruise } = await import('dependency-cruiser');
  const { default: extractDepcruiseOptions } = await import('dependency-cruiser/config-utl/extract-depcruise-options');
  const cwd = process.cwd();
  process.chdir(root); // the rules' paths are relative to the repository
  try {
    const options = await extractDepcruiseOptions(join(ROOT, '.dependency-cruiser.cjs'));
    const { output } = await cruise(dirs, { ...options, validate: true, outputType: 'json' });
    return JSON.parse(output).summary.violations.map((v) => `${v.from} → ${v.to}: ${v.rule.name}${v.cycle ? ` (${v.cycle.map((c) => c.name ?? c).join(' → ')})` : ''}`);
  } finally {
    process.chdir(cwd);
  }
}

/** The test files whose SQL checkTestSql reads, from the repository's root: the specs of the test folders and of apps/api/src. */
export function testFiles() {
  return [...TEST_DIRS.flatMap(specFiles), ...sourceFiles(API_SRC, true)].map((file) => relative(ROOT, file).split(sep).join('/'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sources = sourceFiles(API_SRC).map((file) => ({ path: relative(API_SRC, file).split(sep).join('/'), text: readFileSync(file, 'utf8') }));
  const specs = testFiles().map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
  const problems = [
    ...(await checkImports()),
    ...(await checkStatements(sources)),
    ...checkModuleExports(sources),
    ...checkTestSql(specs),
    ...checkArchitectureDoc(process.argv.includes('--write')),
  ];
  for (const problem of problems) console.log(problem);
  console.log(
    problems.length
      ? `${problems.length} boundary problem(s)`
      : `boundaries hold: ${Object.keys(modules).length} modules, imports, table owners, module exports, SQL in ${specs.length} test files, the architecture doc`,
  );
  process.exitCode = problems.length ? 1 : 0;
}
