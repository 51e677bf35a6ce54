import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPOSITORY = fileURLToPath(new URL('../../../..', import.meta.url));
const CHECK = fileURLToPath(new URL('../../../../scripts/check-boundaries.mjs', import.meta.url));

type ModuleMap = Record<string, { tables: string[]; uses: string[] }>;
interface BoundaryChecks {
  checkStatements(sources: { path: string; text: string }[], map?: ModuleMap): string[];
  checkModuleExports(sources: { path: string; text: string }[]): string[];
  checkTestSql(specs: { path: string; text: string }[]): string[];
}

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
    const problems = checkStatements(
      [
        { path: 'web/probe-page.controller.ts', text: '// we update the page\nconst q = `SELECT id FROM users WHERE email = $1`;' },
        { path: 'tokens/probe.repository.ts', text: 'const sql = `UPDATE refresh_tokens SET revoked_at = now()`;' },
        { path: 'users/probe.repository.ts', text: 'const sql = `UPDATE users SET name = $1`; // delete from the list, select one from the menu' },
        { path: 'users/probe.service.ts', text: '// Select the newest from the list, then update its row' },
      ],
      map,
    );
    expect(problems).toEqual([
      'apps/api/src/web/probe-page.controller.ts:2: SQL outside a repository (*.repository.ts, database/ or migrations/)',
      'apps/api/src/tokens/probe.repository.ts:1: writes refresh_tokens, which refresh-tokens/ owns',
    ]);
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
