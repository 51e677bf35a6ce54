import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPOSITORY = fileURLToPath(new URL('../../../..', import.meta.url));
const CHECK = fileURLToPath(new URL('../../../../scripts/check-boundaries.mjs', import.meta.url));

type ModuleMap = Record<string, { tables: string[]; uses: string[] }>;
interface BoundaryChecks {
  checkStatements(sources: { path: string; text: string }[], map?: ModuleMap): string[];
}

/** The house rules of issue #37, held by scripts/check-boundaries.mjs (`npm test` runs it first too). */
describe('module boundaries (scripts/check-boundaries.mjs)', () => {
  it('hold on the code as it is: imports follow apps/api/module-map.json, no loop, each table written by its owner', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CHECK], { cwd: REPOSITORY, timeout: 60_000 }).catch(
      (err: { stdout: string; code: number }) => ({ stdout: `exit ${err.code}\n${err.stdout}` }),
    );
    expect(stdout).toMatch(/^boundaries hold: \d+ modules, imports, table owners, the architecture doc\n$/);
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
});
