import { render, useInput } from 'ink';
import qrcode from 'qrcode-terminal';
import { type BrowserDecision, openBrowser } from '../device-login/browser.js';
import type { DeviceLoginClient, DeviceLoginResult, DeviceLoginStart, WaitEvent } from '../device-login/device-login-client.js';
import { CliError, EXIT } from '../errors.js';
import { LoginView, type LoginViewProps } from './login-view.js';

export interface LoginScreenOptions {
  start: DeviceLoginStart;
  device: DeviceLoginClient;
  browser: BrowserDecision;
  showQr: boolean;
  timeoutSeconds?: number;
  signal: AbortSignal;
  stdout: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
}

/** Ink takes the keyboard in raw mode, so Ctrl-C arrives as input, not as SIGINT. */
function CancelOnCtrlC({ onCancel }: { onCancel: () => void }) {
  useInput((input, key) => {
    if (key.ctrl && input === 'c') onCancel();
  });
  return null;
}

/**
 * A QR code of the link, only where it fits: beside the link on a wide
 * terminal, below it on a tall one, else not at all — the link and code must
 * never scroll out of sight.
 */
export function qrFor(url: string, size: { columns?: number; rows?: number }): LoginViewProps['qr'] {
  let text = '';
  qrcode.generate(url, { small: true }, (generated) => (text = generated.trimEnd()));
  const lines = text.split('\n');
  const width = Math.max(...lines.map((line) => line.length));
  const columns = size.columns ?? 0;
  const rows = size.rows ?? 0;
  const textWidth = Math.max(url.length, 62) + 2;
  // The rest of the screen (code box, link, notes, status) takes about 16 rows.
  if (columns >= textWidth + 4 + width && rows >= lines.length + 9) return { text, placement: 'side' };
  if (columns >= width + 2 && rows >= lines.length + 16) return { text, placement: 'below' };
  return undefined;
}

/** Runs the wait with the live view; resolves with the token or throws what failed. */
export async function runLoginScreen(options: LoginScreenOptions): Promise<DeviceLoginResult> {
  const { start, device, stdout, stdin } = options;
  const cancel = new AbortController();
  const signal = AbortSignal.any([options.signal, cancel.signal]);
  let deadline = Date.now() + Math.min(options.timeoutSeconds ?? Infinity, start.expiresInSeconds) * 1000;
  const state: LoginViewProps = {
    verificationUrl: start.verificationUrl,
    userCode: start.userCode,
    phase: 'waiting',
    msLeft: deadline - Date.now(),
    qr: options.showQr ? qrFor(start.verificationUrl, stdout) : undefined,
    // Known before the first frame, so the first frame is already complete.
    browserNote: options.browser.open ? 'Opening your browser…' : options.browser.reason ? `Not opening a browser (${options.browser.reason}).` : undefined,
  };
  const view = () => (
    <>
      <LoginView {...state} msLeft={deadline - Date.now()} />
      {stdin.isTTY ? <CancelOnCtrlC onCancel={() => cancel.abort(new CliError('Cancelled. Nothing was saved.', EXIT.interrupted))} /> : null}
    </>
  );
  const update = (changes: Partial<LoginViewProps>) => {
    Object.assign(state, changes);
    app.rerender(view());
  };

  const app = render(view(), { stdout, stdin, exitOnCtrlC: false, patchConsole: false });
  const ticker = setInterval(() => app.rerender(view()), 1000);

  // The code and link are on screen before the browser is tried; a failure is a hint.
  if (options.browser.open) {
    void openBrowser(start.verificationUrl, options.browser).then((error) =>
      update({ browserNote: error ? `Could not open a browser (${error}): open the link yourself.` : 'Opened the link in your browser.' }),
    );
  }

  const onEvent = (event: WaitEvent) => {
    if (event.kind === 'waiting') {
      deadline = event.deadline;
      update({ phase: 'waiting', notice: undefined });
    } else if (event.kind === 'slowed-down') {
      update({ notice: `The server asked to poll less often: every ${event.intervalMs / 1000} s.` });
    } else {
      update({ phase: 'reconnecting', notice: `Lost the server (${event.reason}); retrying in ${Math.round(event.retryInMs / 1000)} s…` });
    }
  };

  try {
    const result = await device.waitForAuthorization(start, { signal, timeoutSeconds: options.timeoutSeconds, onEvent });
    update({ phase: 'success', outcome: `Logged in as ${result.user.name} <${result.user.email}>`, notice: undefined });
    return result;
  } catch (err) {
    const error = err instanceof CliError ? err : signal.aborted ? new CliError('Cancelled. Nothing was saved.', EXIT.interrupted) : err;
    if (error instanceof CliError) {
      update({ phase: error.exitCode === EXIT.interrupted ? 'cancelled' : 'failed', outcome: error.message, hint: error.hint, notice: undefined });
      // Shown on screen already: the caller should only set the exit code.
      throw Object.assign(error, { shown: true });
    }
    throw error;
  } finally {
    clearInterval(ticker);
    app.unmount();
    await app.waitUntilExit().catch(() => undefined);
  }
}
