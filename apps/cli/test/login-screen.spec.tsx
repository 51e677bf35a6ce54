import { EventEmitter } from 'node:events';
import type { DeviceLoginResult, WaitEvent } from '../src/device-login/device-login-client.js';
import { type LoginScreenOptions, runLoginScreen } from '../src/ui/login-screen.js';

/** A terminal for Ink: a screen that records what is written, and a keyboard. */
class FakeScreen extends EventEmitter {
  columns = 100;
  rows = 30;
  isTTY = true;
  written = '';
  private frames: string[] = [];
  write = (text: string) => {
    this.written += text;
    this.frames.push(text);
    return true;
  };
  /** The last frame drawn: Ink writes a whole frame at a time (and control sequences alone, as a cursor shown again). */
  lastFrame() {
    return this.frames.findLast((text) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').trim() !== '');
  }
}
class FakeKeyboard extends EventEmitter {
  isTTY = true;
  private pending: string | null = null;
  press(data: string) {
    this.pending = data;
    this.emit('readable');
    this.emit('data', data);
  }
  read = () => {
    const data = this.pending;
    this.pending = null;
    return data;
  };
  setEncoding() {}
  setRawMode() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
}

const start = {
  deviceCode: 'prsd_x',
  userCode: 'BCDF-GHJK',
  verificationUrl: 'https://id.example.com/device?user_code=BCDF-GHJK',
  intervalSeconds: 5,
  expiresInSeconds: 600,
};
const result: DeviceLoginResult = { accessToken: 'prs_t', expiresAt: '2030-01-01T00:00:00.000Z', user: { id: 'u', email: 'ada@example.com', name: 'Ada Lovelace' } };

function screenOptions(wait: LoginScreenOptions['wait'], explain: LoginScreenOptions['explain'] = () => undefined) {
  const stdout = new FakeScreen();
  const stdin = new FakeKeyboard();
  const options: LoginScreenOptions = {
    start,
    browser: { open: false, reason: '--no-browser' },
    showQr: true,
    deadline: Date.now() + 600_000,
    wait,
    explain,
    signal: new AbortController().signal,
    stdout: stdout as unknown as NodeJS.WriteStream,
    stdin: stdin as unknown as NodeJS.ReadStream,
  };
  return { options, stdout, stdin };
}

describe('runLoginScreen', () => {
  it('authorized: ends with "Logged in as", the link and the code, and no QR code', async () => {
    const { options, stdout } = screenOptions(async (_signal, onEvent) => {
      onEvent({ kind: 'waiting', deadline: Date.now() + 300_000 } satisfies WaitEvent);
      return result;
    });
    await expect(runLoginScreen(options)).resolves.toEqual({ kind: 'authorized', result });
    // Only the last frame: Ink draws no other under CI (the waiting frames are login-view.spec's).
    const last = stdout.lastFrame()!;
    expect(last).toContain('✓ Logged in as Ada Lovelace <ada@example.com>');
    expect(last).toContain('BCDF-GHJK');
    expect(last).toContain(start.verificationUrl);
    expect(last).not.toContain('Or scan it with your phone:');
    expect(last).not.toContain('Not opening a browser');
  });

  it('authorized, for auth:refresh: says who approved instead of "Logged in as"', async () => {
    const { options, stdout } = screenOptions(async () => result);
    await runLoginScreen({ ...options, approvedText: (user) => `Approved by ${user.name} <${user.email}>` });
    expect(stdout.lastFrame()).toContain('✓ Approved by Ada Lovelace <ada@example.com>');
    expect(stdout.lastFrame()).not.toContain('Logged in as');
  });

  it('failed: draws the explained message and hint, and says it is shown', async () => {
    const denied = new Error('denied');
    const { options, stdout } = screenOptions(
      async () => {
        throw denied;
      },
      () => ({ message: 'Login was denied in the browser, or the code expired.', hint: 'Run `prospect auth:login` to try again.' }),
    );
    await expect(runLoginScreen(options)).resolves.toEqual({ kind: 'failed', error: denied, shown: true });
    expect(stdout.written).toContain('✗ Login was denied in the browser, or the code expired.');
    expect(stdout.written).toContain('Run `prospect auth:login` to try again.');
  });

  it('a bug is not drawn as an expected failure', async () => {
    const bug = new TypeError('x is undefined');
    const { options, stdout } = screenOptions(async () => {
      throw bug;
    });
    await expect(runLoginScreen(options)).resolves.toEqual({ kind: 'failed', error: bug, shown: false });
    expect(stdout.written).not.toContain('x is undefined');
  });

  it('Ctrl-C stops the wait and ends as cancelled', async () => {
    const { options, stdout, stdin } = screenOptions(
      (signal) =>
        new Promise<DeviceLoginResult>((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
          setImmediate(() => stdin.press('\u0003'));
        }),
    );
    await expect(runLoginScreen(options)).resolves.toEqual({ kind: 'cancelled' });
    expect(stdout.written).toContain('✗ Cancelled. Nothing was saved.');
  });
});
