import { CliError } from '../errors.js';

/**
 * The OS credential store (macOS Keychain, Windows Credential Manager, the Secret Service on
 * Linux) as the session needs it: one secret per entry, an entry named by a service and an
 * account. An interface, so the session's code is tested with one in memory; the real one is
 * osKeychain below.
 */
export interface Keychain {
  /** The entry's secret, or null when there is no such entry. */
  get(service: string, account: string): Promise<string | null>;
  set(service: string, account: string, secret: string): Promise<void>;
  /** True when an entry was there to delete. */
  delete(service: string, account: string): Promise<boolean>;
}

/**
 * The keychain could not be used: not reachable (no Secret Service on a headless Linux, no
 * D-Bus session), locked with no way to ask for its password, or the native module missing.
 * `reason` is one clause and `fix` what makes the keychain usable, for callers that say it in
 * their own sentence; the message and hint are the general ones.
 */
export class KeychainError extends CliError {
  constructor(
    readonly reason: string,
    readonly fix: string = KEYCHAIN_FIX,
    message = `The OS keychain cannot be used: ${reason}.`,
    hint = `To use the keychain, ${fix}, and try again; or keep the tokens in the session file: log in without --secure-storage.`,
  ) {
    super(message, 1, hint);
  }
}

/** What makes the keychain usable, said for the platform (on Linux it is often not running at all). */
export const KEYCHAIN_FIX = process.platform === 'linux' ? 'unlock your keyring, or start a Secret Service' : 'unlock your keychain';

/**
 * Where a server's sessions are kept: `prospect:<host>` as `gh:github.com` is, with the port and
 * any path of the API's address, so two servers of one host never share an entry. The account
 * of an entry is the user's id on that server: one entry per account, as the accounts files
 * hold one session per account (accounts.ts sameAccount).
 */
export function keychainService(apiBaseUrl: string): string {
  const url = new URL(apiBaseUrl);
  const path = url.pathname.replace(/\/+$/, '');
  return `prospect:${url.host}${path}`;
}

/** Bounds a keychain that neither answers nor fails (an unlock prompt nobody can see). */
const KEYCHAIN_TIMEOUT_MS = 20_000;

type KeyringModule = typeof import('@napi-rs/keyring');
let keyring: Promise<KeyringModule> | undefined;

/**
 * The native module is loaded here, at the first use of the keychain, and only then: a session
 * kept in the session file (the default) never loads a native addon. It is an optional
 * dependency of the package, outside the bundle (build.mjs), so it can be missing.
 */
function loadKeyring(): Promise<KeyringModule> {
  keyring ??= import('@napi-rs/keyring').catch((err: unknown) => {
    keyring = undefined;
    throw new KeychainError(`its support, the optional package @napi-rs/keyring, is not installed with prospect (${firstLine(err)})`, 'install prospect again with its optional dependencies (npm install without --omit=optional)');
  });
  return keyring;
}

/** The OS keychain through @napi-rs/keyring, the library VS Code moved to from keytar. */
export const osKeychain: Keychain = {
  get: (service, account) => withEntry(service, account, (entry, signal) => entry.getPassword(signal)),
  set: (service, account, secret) => withEntry(service, account, (entry, signal) => entry.setPassword(secret, signal)),
  delete: (service, account) => withEntry(service, account, (entry, signal) => entry.deleteCredential(signal)),
};

async function withEntry<T>(service: string, account: string, use: (entry: InstanceType<KeyringModule['AsyncEntry']>, signal: AbortSignal) => Promise<T>): Promise<T> {
  const { AsyncEntry } = await loadKeyring();
  const timeout = AbortSignal.timeout(KEYCHAIN_TIMEOUT_MS);
  try {
    // On Linux, the Secret Service only: the library's fallback, the kernel's keyring, forgets
    // everything at a reboot, and a session lost that way would look like a bug of prospect.
    const entry = new AsyncEntry(service, account, { linux: { store: 'secret-service' } });
    return await use(entry, timeout);
  } catch (err) {
    if (timeout.aborted) throw new KeychainError(`it did not answer within ${KEYCHAIN_TIMEOUT_MS / 1000} s (is it waiting to be unlocked?)`);
    throw new KeychainError(keychainReason(err));
  }
}

/**
 * The library's error in words. Its messages are the platform's (D-Bus's, the Secret
 * Service's), often several causes deep; the known ones are said plainly, any other by its
 * first line, which names the platform's own words.
 */
export function keychainReason(err: unknown): string {
  const text = causes(err).join(' | ');
  if (/autolaunch|DBUS_SESSION_BUS_ADDRESS|Failed to connect to socket|ServiceUnknown|No such file or directory|not provided by any \.service files/i.test(text)) {
    return 'no Secret Service runs here (no D-Bus session bus)';
  }
  if (/prompt was dismissed|is locked|locked collection/i.test(text)) return 'it is locked, and no prompt to unlock it could be shown';
  if (/no result found|collection.*does not exist|Object does not exist at path/i.test(text)) return 'the Secret Service has no default keyring to keep the tokens in';
  return firstLine(err);
}

function causes(err: unknown): string[] {
  const found: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) found.push(e instanceof Error ? e.message : String(e));
  return found;
}

const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
