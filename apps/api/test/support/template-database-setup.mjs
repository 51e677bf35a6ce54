// jest's globalSetup (both workspaces' configs): names this run's template database, a database
// with every migration applied that test files copy instead of migrating their own
// (test-database.ts, migratedTemplate). Only the name is chosen here: the first file that needs
// the template builds it, from the TypeScript migrations the run is testing. The name is in the
// environment, which jest's workers inherit; template-database-teardown.mjs drops it.
import { randomBytes } from 'node:crypto';

export default function nameTemplateDatabase() {
  if (process.env.TEST_DATABASE_URL) process.env.PROSPECT_TEST_TEMPLATE = `prospect_template_${randomBytes(6).toString('hex')}`;
}
