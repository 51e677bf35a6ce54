import { OAuthClientsService } from '../../src/oauth/oauth-clients.service.js';
import type { TestApp } from './test-app.js';

/** A client as the app reads it (OAuthClientsService), or null when there is none with that id. */
export const clientById = (api: TestApp, id: string) => api.app.get(OAuthClientsService).find(id);

/** The ids of every registered client, the built-in one among them. */
export const clientIds = async (api: TestApp) => (await api.app.get(OAuthClientsService).list()).map((client) => client.id);

/*
 * SQL below: the service disables a client together with its logins and tokens, so the state a
 * race leaves (the client disabled, a login it did not see) is written directly; and the tokens
 * module reads tokens per person, while a test asks what one client was issued.
 */

/** Disables the client and nothing else, as if a login had been approved after the disable cancelled the others. */
export async function markClientDisabledOnly(api: TestApp, id: string): Promise<void> {
  await api.dataSource.query(`UPDATE oauth_clients SET disabled_at = now() WHERE id = $1`, [id]);
}
