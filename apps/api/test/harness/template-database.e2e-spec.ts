import { randomBytes } from 'node:crypto';
import { MIGRATIONS } from '../../src/database/migrations/index.js';
import { createTestDatabase, withClient } from '../support/test-database.js';

/**
 * The template test files' databases are copied from (test/support/test-database.ts): built once,
 * by whichever file asks first, even when several ask at once (two workers starting), and complete
 * in every copy. The embedded database has no templates: there a "migrated" database is empty and
 * the app's start migrates it.
 */
describe('the migrated template database of a run', () => {
  it('is built once when several files ask for it at once, and every copy has every migration applied', async () => {
    const runs = process.env.PROSPECT_TEST_TEMPLATE;
    // A template of this test's own, not built yet, as at the start of a run.
    const template = `prospect_template_${randomBytes(6).toString('hex')}`;
    process.env.PROSPECT_TEST_TEMPLATE = template;
    try {
      const copies = await Promise.all([1, 2, 3, 4].map(() => createTestDatabase({ migrated: true })));
      try {
        for (const copy of copies) {
          const applied = await withClient(copy.url, async (c) =>
            // sql-on-purpose: the migrations table, which no service reads
            (await c.query(`SELECT name FROM migrations ORDER BY id`).catch(() => ({ rows: [] }))).rows.map((r: { name: string }) => r.name),
          );
          expect(applied).toEqual(copy.kind === 'server' ? MIGRATIONS.map((m) => new m().name) : []);
        }
      } finally {
        await Promise.all(copies.map((copy) => copy.drop()));
      }
    } finally {
      if (runs === undefined) delete process.env.PROSPECT_TEST_TEMPLATE;
      else process.env.PROSPECT_TEST_TEMPLATE = runs;
      const server = process.env.TEST_DATABASE_URL;
      // sql-on-purpose: the test's own template (and what a failed build left), dropped as globalTeardown drops the run's
      if (server) {
        await withClient(server, async (c) => {
          for (const name of [template, `${template}_building`]) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        });
      }
    }
  });
});
