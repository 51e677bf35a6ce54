// jest's globalTeardown: drops the run's template database (template-database-setup.mjs), and
// what a file that failed while building it left.
import pg from 'pg';

export default async function dropTemplateDatabase() {
  const template = process.env.PROSPECT_TEST_TEMPLATE;
  if (!template || !process.env.TEST_DATABASE_URL) return;
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await client.connect();
  try {
    for (const name of [template, `${template}_building`]) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
