import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPOSITORY = fileURLToPath(new URL('../../../..', import.meta.url));
const CHECK = fileURLToPath(new URL('../../../../scripts/check-boundaries.mjs', import.meta.url));

type ModuleMap = Record<string, { tables: string[]; reads?: string[]; locks?: string[]; uses: string[] }>;
interface BoundaryChecks {
  checkStatements(sources: { path: string; text: string }[], map?: ModuleMap): Promise<string[]>;
  checkModuleExports(sources: { path: string; text: string }[]): string[];
  checkTestSql(specs: { path: string; text: string }[]): string[];
  checkImports(root?: string, dirs?: string[]): Promise<string[]>;
  testFiles(): string[];
}

/** A repository of `module` whose one method sends `statement` (written as TypeScript source). */
const repository = (statement: string, preamble = '') =>
  `import { Sql } from '../database/sql.js';\n${preamble}\nexport class ProbeRepository {\n  constructor(private readonly sql: Sql) {}\n  run(id: string) {\n    return this.sql.rows(${statement}, [id]);\n  }\n}\n`;

/** The house rules of issue #37, held by scripts/check-boundaries.mjs (`npm test` runs it first too). */
describe('module boundaries (scripts/check-boundaries.mjs)', () => {
  it('hold on the code as it is: imports follow apps/api/module-map.json, no loop, each table written by its owner, no repository lent, no SQL in a test without its reason', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CHECK], { cwd: REPOSITORY, timeout: 60_000 }).catch(
      (err: { stdout: string; code: number }) => ({ stdout: `exit ${err.code}\n${err.stdout}` }),
    );
    expect(stdout).toMatch(/^boundaries hold: \d+ modules, imports, table owners, module exports, SQL in \d+ test files, the architecture doc\n$/);
  });

  it('finds a table written outside its owner and SQL outside a repository, not prose that reads like SQL', async () => {
    const { checkStatements } = (await import(CHECK)) as BoundaryChecks;
    const map: ModuleMap = {
      tokens: { tables: ['access_tokens'], uses: [] },
      'refresh-tokens': { tables: ['refresh_tokens'], uses: [] },
      users: { tables: ['users'], uses: [] },
    };
    const problems = await checkStatements(
      [
        { path: 'web/probe-page.controller.ts', text: '// we update the page\nconst q = `SELECT id FROM users WHERE email = $1`;' },
        { path: 'tokens/probe.repository.ts', text: 'const sql = `UPDATE refresh_tokens SET revoked_at = now()`;' },
        { path: 'users/probe.repository.ts', text: 'const sql = `UPDATE users SET name = $1`; // delete from the list, select one from the menu' },
        { path: 'users/probe.service.ts', text: '// Select the newest from the list, then update its row' },
      ],
      map,
    );
    expect(problems).toEqual([
      'apps/api/src/tokens/probe.repository.ts:1: writes refresh_tokens, which refresh-tokens/ owns',
      'apps/api/src/web/probe-page.controller.ts:2: SQL outside a repository (*.repository.ts, database/ or migrations/)',
    ]);
  });

  describe('table ownership from parsed SQL (issue #43, finding 10)', () => {
    const map: ModuleMap = {
      tokens: { tables: ['access_tokens'], reads: ['users'], uses: [] },
      'refresh-tokens': { tables: ['refresh_tokens'], uses: [] },
      'device-login': { tables: ['device_logins'], reads: ['users'], uses: [] },
      users: { tables: ['users'], uses: [] },
      audit: { tables: ['auth_events'], uses: [] },
    };
    const check = async (path: string, text: string, extra: { path: string; text: string }[] = []) => {
      const { checkStatements } = (await import(CHECK)) as BoundaryChecks;
      return checkStatements([{ path, text }, ...extra], map);
    };
    const at = (path: string) => `apps/api/src/${path}:6`;

    it('fails on a write to another module’s table', async () => {
      expect(await check('tokens/probe.repository.ts', repository('`UPDATE refresh_tokens SET revoked_at = now() WHERE id = $1`'))).toEqual([
        `${at('tokens/probe.repository.ts')}: writes refresh_tokens, which refresh-tokens/ owns`,
      ]);
    });

    it('fails on lower-case SQL: update users set name = $1', async () => {
      expect(await check('tokens/probe.repository.ts', repository("'update users set name = $1'"))).toEqual([
        `${at('tokens/probe.repository.ts')}: writes users, which users/ owns`,
      ]);
    });

    it('fails on a schema-qualified name: public.users, quoted or not', async () => {
      expect(await check('tokens/probe.repository.ts', repository('`INSERT INTO public."users" (email) VALUES ($1)`'))).toEqual([
        `${at('tokens/probe.repository.ts')}: writes users, which users/ owns`,
      ]);
    });

    it('fails on SQL through a const, however it is put together', async () => {
      const text = repository('STATEMENT', "const TABLE = 'users';\nconst STATEMENT = 'DELETE FROM ' + TABLE + ' WHERE id = $1';");
      // The line of the text that names the table.
      expect(await check('tokens/probe.repository.ts', text)).toEqual([`apps/api/src/tokens/probe.repository.ts:2: writes users, which users/ owns`]);
      const table = repository("STATEMENTS['revoke']", "const STATEMENTS = Object.fromEntries((['revoke'] as const).map((k) => [k, `UPDATE refresh_tokens SET revoked_at = now() WHERE id = $1`]));");
      expect(await check('tokens/probe.repository.ts', table)).toEqual([`apps/api/src/tokens/probe.repository.ts:2: writes refresh_tokens, which refresh-tokens/ owns`]);
    });

    it('fails on SELECT … FOR UPDATE of another module’s table, not on a lock of its own (FOR UPDATE OF its alias)', async () => {
      const select = 'SELECT d.id FROM device_logins d JOIN users u ON u.id = d.decided_by_user_id WHERE d.id = $1';
      expect(await check('device-login/probe.repository.ts', repository(`\`${select} FOR UPDATE\``))).toEqual([
        `${at('device-login/probe.repository.ts')}: locks (FOR UPDATE/SHARE) users, which users/ owns: only its owner locks it`,
      ]);
      expect(await check('device-login/probe.repository.ts', repository(`\`${select} FOR UPDATE OF d\``))).toEqual([]);
      expect(await check('tokens/probe.repository.ts', repository('`SELECT id FROM (SELECT id FROM users) u WHERE id = $1 FOR SHARE`'))).toEqual([
        `${at('tokens/probe.repository.ts')}: locks (FOR UPDATE/SHARE) users, which users/ owns: only its owner locks it`,
      ]);
    });

    it('fails on a read of another module’s table that module-map.json does not list, in a JOIN, a subquery or a CTE; a CTE’s name is no table', async () => {
      const text = repository(
        '`WITH family AS (SELECT id FROM device_logins WHERE id = $1) SELECT t.id FROM access_tokens t JOIN family ON family.id = t.device_login_id JOIN users u ON u.id = t.user_id WHERE EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.id = t.id)`',
      );
      expect(await check('tokens/probe.repository.ts', text)).toEqual([
        `${at('tokens/probe.repository.ts')}: reads device_logins, which device-login/ owns: not in tokens's reads (apps/api/module-map.json)`,
        `${at('tokens/probe.repository.ts')}: reads refresh_tokens, which refresh-tokens/ owns: not in tokens's reads (apps/api/module-map.json)`,
      ]);
    });

    it('counts a fragment’s table as its module’s: auditInsert(...) in a repository writes auth_events as audit/', async () => {
      const fragment = await readFile(join(REPOSITORY, 'apps/api/src/audit/audit-insert.sql-fragment.ts'), 'utf8');
      const text = repository(
        "`WITH changed AS (UPDATE users SET name = $2 WHERE id = $1 RETURNING id) ${auditInsert({ type: event, userId: 'id', ip: 'NULL', detail: '(SELECT jsonb_agg(id) FROM refresh_tokens)', createdAt: 'now()', from: 'changed' })}`",
        "import { auditInsert } from '../audit/audit-insert.sql-fragment.js';\nconst event: 'account.rename' | 'password.change' = 'account.rename';",
      );
      expect(await check('users/probe.repository.ts', text, [{ path: 'audit/audit-insert.sql-fragment.ts', text: fragment }])).toEqual([
        `apps/api/src/users/probe.repository.ts:7: reads refresh_tokens, which refresh-tokens/ owns: not in users's reads (apps/api/module-map.json)`,
      ]);
    });

    it('says what it cannot read instead of skipping it, unless the call says why (sql-opaque)', async () => {
      expect(await check('tokens/probe.repository.ts', repository('build(id)', 'declare function build(id: string): string;'))).toEqual([
        `apps/api/src/tokens/probe.repository.ts:6: SQL the checker cannot read: build(id) is not a constant text (make it a constant text, or say why above the call: // sql-opaque: …)`,
      ]);
      expect(await check('tokens/probe.repository.ts', repository('`UPDATE ${table} SET revoked_at = now() WHERE id = $1`', 'declare const table: string;'))).toEqual([
        `apps/api/src/tokens/probe.repository.ts:6: SQL the checker cannot read: a table named by a value it cannot know (make it a constant text, or say why above the call: // sql-opaque: …)`,
      ]);
      const opaque = repository('text', 'declare const text: string;').replace('    return', '    // sql-opaque: a probe\n    return');
      expect(await check('tokens/probe.repository.ts', opaque)).toEqual([]);
    });

    it('reads no prose and no counter as SQL; an unknown ${…} in a SET list still parses', async () => {
      const text = [
        "import { Sql } from '../database/sql.js';",
        '// Select the newest from the list, then update its row',
        'export class ProbeRepository {',
        '  constructor(private readonly sql: Sql, private readonly refused: { count(ip: string): void }) {}',
        '  run(sets: string[]) {',
        "    this.refused.count('update the page');",
        "    return this.sql.rows(`UPDATE access_tokens SET ${sets.join(', ')} WHERE id = $1`, []);",
        '  }',
        '}',
      ].join('\n');
      expect(await check('tokens/probe.repository.ts', text)).toEqual([]);
    });

    it('finds lower-case SQL outside a repository', async () => {
      expect(await check('web/probe-page.controller.ts', "export const q = 'select id from users where email = $1';")).toEqual([
        'apps/api/src/web/probe-page.controller.ts:1: SQL outside a repository (*.repository.ts, database/ or migrations/)',
      ]);
    });
  });

  it('reads the specs of apps/api/src too, with the rule of the tests (SQL in src/**/*.spec.ts says why)', async () => {
    const { testFiles, checkTestSql } = (await import(CHECK)) as BoundaryChecks;
    expect(testFiles()).toContain('apps/api/src/database/embedded-postgres.spec.ts');
    const call = (argument: string) => `await pool.query(${argument});`;
    expect(checkTestSql([{ path: 'apps/api/src/users/probe.spec.ts', text: call("'update users set name = $1'") }])).toEqual([
      'apps/api/src/users/probe.spec.ts:1: SQL in a test: arrange or read through a service or a fixture in support/, or say why above it (// sql-on-purpose: …)',
    ]);
  });

  it('fails on an injected upward import (dependency-cruiser with the module map)', async () => {
    const { checkImports } = (await import(CHECK)) as BoundaryChecks;
    const root = await mkdtemp(join(tmpdir(), 'prospect-boundaries-'));
    try {
      const files: Record<string, string> = {
        'apps/api/src/users/users.service.ts': "import { page } from '../web/page.js';\nexport const user = page;\n",
        'apps/api/src/web/page.ts': 'export const page = 1;\n',
      };
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(root, path)), { recursive: true });
        await writeFile(join(root, path), text);
      }
      expect(await checkImports(root, ['apps/api/src'])).toEqual(['apps/api/src/users/users.service.ts → apps/api/src/web/page.ts: api-users-uses-only-its-map']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('finds a module that lends its repository', async () => {
    const { checkModuleExports } = (await import(CHECK)) as BoundaryChecks;
    const problems = checkModuleExports([
      { path: 'users/users.module.ts', text: '@Module({\n  providers: [UsersService, UsersRepository],\n  exports: [UsersService, UsersRepository],\n})' },
      { path: 'tokens/tokens.module.ts', text: '@Module({ providers: [TokensService, AccessTokensRepository], exports: [TokensService] })' },
    ]);
    expect(problems).toEqual(['apps/api/src/users/users.module.ts:3: exports UsersRepository: a module lends the others a service, not its repository']);
  });

  it('finds SQL written in a test without a reason just above it, not a query string or SQL that says why', async () => {
    const { checkTestSql } = (await import(CHECK)) as BoundaryChecks;
    // Built from parts, so that this file's own text holds no call the check would see.
    const call = (receiver: string, typeArgument: string, argument: string) => `await ${receiver}.query${typeArgument}(${argument});`;
    const problems = checkTestSql([
      {
        path: 'apps/api/test/probe.e2e-spec.ts',
        text: [
          call('api.dataSource', '', "`UPDATE users SET name = 'x'`"),
          call('client', '<{ n: number }>', '\n  `SELECT count(*) FROM users`'),
          call('supertest(app).get("/x")', '', '{ page: 2 }'),
          call('pool', '', 'sql'),
          '// sql-on-purpose: the secret is stored only as its hash',
          call('api.dataSource', '', "'SELECT token_hash FROM access_tokens'"),
        ].join('\n'),
      },
    ]);
    expect(problems).toEqual([
      'apps/api/test/probe.e2e-spec.ts:1: SQL in a test: arrange or read through a service or a fixture in support/, or say why above it (// sql-on-purpose: …)',
      'apps/api/test/probe.e2e-spec.ts:2: SQL in a test: arrange or read through a service or a fixture in support/, or say why above it (// sql-on-purpose: …)',
    ]);
  });
});
