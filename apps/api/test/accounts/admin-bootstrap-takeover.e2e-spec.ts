import { createUser, userById } from '../support/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';
import { signInAs } from '../support/web-client.js';

/**
 * Issue #31: PROSPECT_ADMIN_EMAIL naming an address someone signed up with first must not make
 * them the administrator with their own password (the operator's admin, pre-hijacked).
 */
describe('the operator admin bootstrap over an existing account', () => {
  let database: TestDatabase;
  beforeAll(async () => (database = await createTestDatabase({ migrated: true })));
  afterAll(() => database?.drop());

  it('leaves an account it did not create alone, says so in one line, and keeps the setup code path open', async () => {
    const first = await startTestApp({ database });
    const squatter = await createUser(first, { email: 'root@example.com' }); // signed up first, with their own password
    await first.close();

    const operator = await startTestApp({ database, env: { PROSPECT_ADMIN_EMAIL: 'Root@Example.com', PROSPECT_ADMIN_PASSWORD: 'the operator password' } });
    try {
      expect((await userById(operator, squatter.id))?.role).toBe('user');
      const warnings = operator.logs().split('\n').filter((line) => line.includes('PROSPECT_ADMIN_EMAIL root@example.com already has an account'));
      expect(warnings).toHaveLength(1);
      expect(operator.logs()).toContain('No administrator yet'); // the setup code (printed by the first start) still works
      await signInAs(operator, 'root@example.com', 'correct horse battery'); // the account is as its owner left it
      await expect(signInAs(operator, 'root@example.com', 'the operator password')).rejects.toThrow();
    } finally {
      await operator.close();
    }
  });
});
