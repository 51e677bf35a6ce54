import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * A real Secret Service for a test: a D-Bus session bus of its own (dbus-run-session) with
 * gnome-keyring-daemon on it, its login keyring made and unlocked with a password, under the
 * test's HOME. Debian's packages `dbus` and `gnome-keyring`, which .ci/run installs.
 */
const NEEDED = ['dbus-run-session', 'dbus-send', 'gnome-keyring-daemon'];

/** The programs missing on this machine; none where a Secret Service can run in a test. */
export const missingForSecretService = (): string[] => NEEDED.filter((name) => spawnSync('sh', ['-c', `command -v ${name}`]).status !== 0);

/** Bounded polls of the bus, in the shell: each answer is a condition, not a guess of time. */
const nameOwned = `dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'`;
const loginLocked = `dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets/collection/login org.freedesktop.DBus.Properties.Get string:org.freedesktop.Secret.Collection string:Locked 2>/dev/null | grep -q 'boolean true'`;
const waitUntil = (condition: string) => `i=0; until ${condition}; do i=$((i+1)); [ "$i" -lt 200 ] || { echo "gave up waiting: ${condition.split(' ')[0]}" >&2; exit 1; }; sleep 0.05; done`;

export interface SecretService {
  /** What a process needs to reach it: the bus's address, and the HOME its keyring lives in. */
  env: { DBUS_SESSION_BUS_ADDRESS: string; HOME: string };
  /** Restarts the daemon without the password: the login keyring is locked, and no prompt can be shown (no display). */
  lock(): Promise<void>;
  /** The secret of an entry as the keychain holds it, or null. */
  read(service: string, account: string): Promise<string | null>;
  stop(): Promise<void>;
}

export async function startSecretService(home: string): Promise<SecretService> {
  const script = [
    `printf '%s' keyring-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null`,
    waitUntil(nameOwned),
    'echo "ready $DBUS_SESSION_BUS_ADDRESS"',
    // Lives until the test closes its stdin; the bus, and the daemon with it, end then.
    'exec cat >/dev/null',
  ].join('\n');
  const child = spawn('dbus-run-session', ['--', 'sh', '-c', script], { env: { PATH: process.env.PATH!, HOME: home }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const ready = /^ready (\S+)$/m.exec(out);
      if (ready) resolve(ready[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the Secret Service did not start (exit ${code}): ${stderr.trim()}`)));
  });
  const env = { DBUS_SESSION_BUS_ADDRESS: address, HOME: home };
  const inSession = (command: string) =>
    new Promise<void>((resolve, reject) => {
      const run = spawn('sh', ['-c', command], { env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      run.stderr.on('data', (d: Buffer) => (err += d.toString()));
      run.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command.split(' ')[0]} failed (exit ${code}): ${err.trim()}`))));
    });
  const keyring = createRequire(import.meta.url).resolve('@napi-rs/keyring');
  return {
    env,
    lock: () => inSession(`gnome-keyring-daemon --replace --components=secrets --daemonize >/dev/null 2>&1\n${waitUntil(loginLocked)}`),
    read: (service, account) =>
      new Promise((resolve, reject) => {
        const script = `new (require(${JSON.stringify(keyring)}).AsyncEntry)(process.argv[1], process.argv[2], { linux: { store: 'secret-service' } }).getPassword().then((s) => process.stdout.write(JSON.stringify(s)))`;
        const run = spawn(process.execPath, ['-e', script, service, account], { env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        run.stdout.on('data', (d: Buffer) => (out += d.toString()));
        run.stderr.on('data', (d: Buffer) => (err += d.toString()));
        run.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`reading the keychain failed: ${err.trim()}`))));
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}
