// Where Prospect runs, and the client an administrator registered for this extension (README.md).
// Change both together with "host_permissions" in manifest.json.
export const PROSPECT_URL = 'http://localhost:3000';
export const CLIENT_ID = 'prospect-extension';
/** openid: who signed in (an ID token); profile: /api/cli/auth/me; email: the address in the ID token. */
export const SCOPE = 'openid profile email';
