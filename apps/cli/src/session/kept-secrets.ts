import { type SessionFile, SessionFileSchema } from '@prospect/contract';
// The star import of zod/mini, as the contract's: lets the bundle drop what is unused.
import * as z from 'zod/mini';
import { type Keychain, KeychainError, keychainService } from './keychain.js';

/**
 * Where a session's secrets (its access and refresh tokens) are kept: in the session file, as
 * the contract has it (the default), or, opted in with `auth:login --secure-storage` or
 * PROSPECT_CREDENTIAL_STORE=keychain, in the OS keychain (issue 48, item 3).
 *
 * In memory a session is always whole, tokens included: every command, the refresh and the
 * accounts code use it as they always did. A session kept in the keychain carries
 * `credentialStore: 'keychain'`, so that whatever writes it again (a refresh, a switch of
 * accounts) writes its tokens back there and never into a file. The file then holds this
 * marker instead of the tokens: every field of the contract's session file but them.
 */
export type CredentialStore = 'file' | 'keychain';
export type KeptSession = SessionFile & { credentialStore?: 'keychain'; serviceAccount?: ServiceAccountOfSession };

/**
 * A service account's session (issue #45: `auth:login --service-account`, a CI token exchanged
 * for an access token of at most an hour): no refresh token, no person. In memory its
 * `user.email` is '' (it has no address, as MeAnswer has it); the file says `null` and names the
 * account: the CLI's own form, not the contract's, so an older `prospect` reads it as no session.
 * `organization` is unknown when its token lacks `profile` (then /me refuses to say).
 */
export interface ServiceAccountOfSession {
  clientId: string;
  organization?: { id: string; slug: string; name: string };
}

export const serviceAccountOf = (session: SessionFile): ServiceAccountOfSession | undefined => (session as KeptSession).serviceAccount;

export const inKeychain = (session: SessionFile): boolean => (session as KeptSession).credentialStore === 'keychain';

/** The session, marked to be kept where `store` says. */
export function keptIn(session: SessionFile, store: CredentialStore): KeptSession {
  const { credentialStore: _was, ...whole } = session as KeptSession;
  return store === 'keychain' ? { ...whole, credentialStore: 'keychain' } : whole;
}

/** A session file's form when its tokens are in the keychain: strict, as the contract's is. */
const KeychainSessionFileSchema = z.extend(z.omit(SessionFileSchema, { accessToken: true, refreshToken: true }), { credentialStore: z.literal('keychain') });

/** A service account's session as the file holds it: always in the file (it lives an hour at most), never renewed. */
const ServiceAccountSessionFileSchema = z.extend(z.omit(SessionFileSchema, { refreshToken: true, user: true, organization: true }), {
  user: z.strictObject({ id: z.string().check(z.minLength(1)), email: z.null(), name: z.string() }),
  serviceAccount: z.strictObject({
    clientId: z.string().check(z.minLength(1), z.maxLength(200)),
    organization: z.optional(z.strictObject({ id: z.string(), slug: z.string(), name: z.string() })),
  }),
});

/** What the keychain entry of a session holds: both tokens in one secret, so a refresh replaces the pair at once. */
const SecretsSchema = z.object({ accessToken: z.string().check(z.minLength(1)), refreshToken: z.optional(z.string().check(z.minLength(1))) });

/** The keychain entry of an account: `prospect:<host>` and the user's id. */
export const keychainEntryOf = (session: Pick<SessionFile, 'apiBaseUrl' | 'user'>) => ({ service: keychainService(session.apiBaseUrl), account: session.user.id });

/** Says where an account's tokens are, for auth:status and messages. */
export function describeEntry(session: Pick<SessionFile, 'apiBaseUrl' | 'user'>): string {
  const { service, account } = keychainEntryOf(session);
  return `the OS keychain (service ${service}, account ${account})`;
}

/** What to write to a file for `session`: the whole session, or, for one kept in the keychain, all but its tokens. */
export function fileFormOf(session: SessionFile): object {
  const serviceAccount = serviceAccountOf(session);
  if (serviceAccount) {
    const { accessToken, apiBaseUrl, user, expiresAt, createdAt } = session;
    return ServiceAccountSessionFileSchema.parse({ accessToken, apiBaseUrl, user: { id: user.id, email: null, name: user.name }, expiresAt, createdAt, serviceAccount });
  }
  if (!inKeychain(session)) return SessionFileSchema.parse(session);
  const { accessToken: _a, refreshToken: _r, ...rest } = session as KeptSession;
  return KeychainSessionFileSchema.parse(rest);
}

/** Puts the session's tokens in its keychain entry; nothing for a session kept in the file. Throws a KeychainError. */
export async function saveSecrets(keychain: Keychain, session: SessionFile): Promise<void> {
  if (!inKeychain(session)) return;
  const { service, account } = keychainEntryOf(session);
  await keychain.set(service, account, JSON.stringify({ accessToken: session.accessToken, ...(session.refreshToken ? { refreshToken: session.refreshToken } : {}) }));
}

/** Deletes the account's keychain entry; true when there was one. Throws a KeychainError. */
export async function forgetSecrets(keychain: Keychain, session: Pick<SessionFile, 'apiBaseUrl' | 'user'>): Promise<boolean> {
  const { service, account } = keychainEntryOf(session);
  return keychain.delete(service, account);
}

export type ParsedSession = { kind: 'session'; session: KeptSession } | { kind: 'invalid'; reason: string };

/**
 * A session as a file holds it (the JSON already parsed), made whole: a session kept in the
 * keychain gets its tokens from there. `where` names the file in the reasons. A keychain that
 * cannot be used throws a KeychainError saying so (the session is not invalid: it is out of
 * reach, and nothing may remove it for that); an entry gone from the keychain (deleted by hand)
 * makes the session invalid, as a corrupt file is.
 */
export async function parseStoredSession(json: unknown, keychain: Keychain, where: string): Promise<ParsedSession> {
  if ((json as { serviceAccount?: unknown } | null)?.serviceAccount !== undefined) {
    const parsed = ServiceAccountSessionFileSchema.safeParse(json);
    if (!parsed.success) return { kind: 'invalid', reason: `${where} is not a valid session (${issueOf(parsed.error)})` };
    const { user, ...rest } = parsed.data;
    return { kind: 'session', session: { ...rest, user: { id: user.id, email: '', name: user.name } } };
  }
  const marked = (json as { credentialStore?: unknown } | null)?.credentialStore !== undefined;
  if (!marked) {
    const parsed = SessionFileSchema.safeParse(json);
    return parsed.success ? { kind: 'session', session: parsed.data } : { kind: 'invalid', reason: `${where} is not a valid session (${issueOf(parsed.error)})` };
  }
  const parsed = KeychainSessionFileSchema.safeParse(json);
  if (!parsed.success) return { kind: 'invalid', reason: `${where} is not a valid session (${issueOf(parsed.error)})` };
  const { service, account } = keychainEntryOf(parsed.data);
  let secret: string | null;
  try {
    secret = await keychain.get(service, account);
  } catch (err) {
    if (!(err instanceof KeychainError)) throw err;
    throw new KeychainError(
      err.reason,
      err.fix,
      `The tokens of the session in ${where} are in the OS keychain, which cannot be used: ${err.reason}.`,
      `To reach it, ${err.fix}, and run the command again; or remove ${where} to forget the session here.`,
    );
  }
  const secrets = secret === null ? undefined : SecretsSchema.safeParse(safeJson(secret)).data;
  if (!secrets) return { kind: 'invalid', reason: `the tokens of ${where} are no longer in the OS keychain (service ${service}, account ${account})` };
  const { credentialStore, ...rest } = parsed.data;
  return { kind: 'session', session: { ...rest, accessToken: secrets.accessToken, ...(secrets.refreshToken ? { refreshToken: secrets.refreshToken } : {}), credentialStore } };
}

function issueOf(error: z.core.$ZodError): string {
  const issue = error.issues[0]!;
  return `${issue.path.length ? issue.path.join('.') : 'file'}: ${issue.message}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
