import { chmod, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSystemError } from '../src/errors.js';
import { configDir, SessionStore } from '../src/session/session-store.js';

const session = {
  accessToken: `prs_${'a'.repeat(43)}`,
  apiBaseUrl: 'http://localhost:3000',
  user: { id: 'u1', email: 'ada@example.com', name: 'Ada' },
  expiresAt: '2030-01-01T00:00:00.000Z',
  createdAt: '2026-01-01T00:00:00.000Z',
};

describe('SessionStore', () => {
  let dir: string;
  let store: SessionStore;
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'prospect-session-')), 'config', 'prospect');
    store = new SessionStore(dir);
  });
  // The temporary directory made above, not only the config directory inside it.
  afterEach(() => rm(join(dir, '..', '..'), { recursive: true, force: true }));

  it('writes exactly the contract fields, owner-only, atomically, and reads them back', async () => {
    await store.write(session);
    expect(await store.read()).toEqual({ kind: 'session', session });
    expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual(session);
    expect((await stat(store.path)).mode & 0o777).toBe(0o600);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual(['auth-session.json']); // no temp file left behind
  });

  it('leaves an existing directory open to others as it is, and says so', async () => {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    await chmod(dir, 0o755);
    const warnings: string[] = [];
    await new SessionStore(dir, (line) => warnings.push(line)).write(session);
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
    expect((await stat(store.path)).mode & 0o777).toBe(0o600);
    expect(warnings).toEqual([`Warning: ${dir} can be read by other users (mode 755); the session file in it is readable by you only.`]);
  });

  it('counts a missing file as no session and removes idempotently', async () => {
    expect(await store.read()).toEqual({ kind: 'none' });
    expect(await store.remove()).toBe(false);
    await store.write(session);
    expect(await store.remove()).toBe(true);
    expect(await store.read()).toEqual({ kind: 'none' });
  });

  it.each([
    ['corrupt JSON', '{"accessToken": "prs_', 'is not valid JSON'],
    ['a partial file', JSON.stringify({ accessToken: 'x' }), 'apiBaseUrl'],
    ['a wrongly typed field', JSON.stringify({ ...session, expiresAt: 12 }), 'expiresAt'],
    ['an unknown field', JSON.stringify({ ...session, extra: true }), 'not a valid session'],
    ['a non-http backend', JSON.stringify({ ...session, apiBaseUrl: 'file:///etc' }), 'apiBaseUrl'],
    ['an array', '[]', 'not a valid session'],
  ])('counts %s as no session, with a one-line reason', async (_, content, reason) => {
    await mkdir(dir, { recursive: true });
    await writeFile(store.path, content);
    const read = await store.read();
    expect(read.kind).toBe('invalid');
    if (read.kind === 'invalid') {
      expect(read.reason).toContain(reason);
      expect(read.reason).not.toContain('\n');
    }
  });

  it('lives in $PROSPECT_CONFIG_DIR, else ~/.config/prospect', () => {
    expect(configDir({ PROSPECT_CONFIG_DIR: '/x/y' })).toBe('/x/y');
    expect(configDir({ XDG_CONFIG_HOME: '/xdg' })).toBe('/xdg/prospect');
    expect(configDir({})).toMatch(/\.config\/prospect$/);
  });
});

describe('SessionStore.checkWritable, before a login asks the server anything', () => {
  let root: string;
  beforeEach(async () => (root = await mkdtemp(join(tmpdir(), 'prospect-writable-'))));
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('creates the directory and leaves nothing in it', async () => {
    const dir = join(root, 'config', 'prospect');
    await new SessionStore(dir).checkWritable();
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readdir(dir)).toEqual([]);
  });

  // A regular file in the way refuses even root, for whom chmod changes nothing.
  it.each([
    ['under a regular file', (file: string) => join(file, 'prospect'), 'part of the path is a file, not a directory'],
    ['that is a regular file', (file: string) => file, 'it is a file, not a directory'],
  ])('refuses a directory %s, naming it', async (_, dirFor, reason) => {
    const file = join(root, 'a-file');
    await writeFile(file, 'not a directory');
    const dir = dirFor(file);
    const err = await new SessionStore(dir).checkWritable().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileSystemError);
    expect(err).toMatchObject({ path: dir, reason, message: `Cannot write to ${dir}: ${reason}.` });
  });
});
