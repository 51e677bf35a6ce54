import type { TestApp } from './test-app.js';

/** Whether a server secret called `name` is stored: SQL, as ServerSecrets makes one whenever it is asked for one, so it cannot tell. */
export async function hasServerSecret(api: TestApp, name: string): Promise<boolean> {
  return (await api.dataSource.query(`SELECT 1 FROM server_secrets WHERE name = $1`, [name])).length > 0;
}
