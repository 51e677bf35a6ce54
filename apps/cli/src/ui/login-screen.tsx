import { render, useInput } from 'ink';
import { useEffect, useState } from 'react';
import qrcode from 'qrcode-terminal';
import { type BrowserDecision, openBrowser } from '../device-login/browser.js';
import type { DeviceLoginResult, DeviceLoginStart, WaitEvent } from '../device-login/device-login-client.js';
import { LoginView, type LoginViewProps } from './login-view.js';

/**
 * Everything the screen needs, handed in. It imports no error classes or
 * clients of its own: it is bundled apart from the rest of the CLI (see
 * build.mjs), so it must not depend on their identity.
 */
export interface LoginScreenOptions {
  start: DeviceLoginStart;
  /** Shown under the link when the approval page is on another host than the API given. */
  hostNote?: string;
  browser: BrowserDecision;
  showQr: boolean;
  /** When the wait ends at the latest, for the countdown until the wait reports its own deadline. */
  deadline: number;
  /** The wait itself, stopped by `signal` (Ctrl-C or SIGINT); reports progress to `onEvent`. */
  wait(signal: AbortSignal, onEvent: (event: WaitEvent) => void): Promise<DeviceLoginResult>;
  /** How an expected failure reads on screen; undefined for a bug, which is not drawn. */
  explain(error: unknown): { message: string; hint?: string } | undefined;
  /** Aborted on SIGINT. */
  signal: AbortSignal;
  stdout: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  /** The line shown once approved (default: "Logged in as Name <email>"). */
  approvedText?: (user: DeviceLoginResult['user']) => string;
}

export type LoginScreenOutcome =
  | { kind: 'authorized'; result: DeviceLoginResult }
  | { kind: 'cancelled' }
  /** `shown`: the failure is on screen already, so the caller need not print it again. */
  | { kind: 'failed'; error: unknown; shown: boolean };

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

type ScreenState = Omit<LoginViewProps, 'msLeft'> & { deadline: number };

/**
 * The live view of one device login: its state is React's. It runs the wait once mounted,
 * moves the countdown every second, and reports how it ended through `onDone` after the
 * final frame is committed, so that frame is what stays on screen.
 */
function LoginScreen({ options, signal, cancel, onDone }: { options: LoginScreenOptions; signal: AbortSignal; cancel: () => void; onDone: (outcome: LoginScreenOutcome) => void }) {
  const { start, stdout, stdin } = options;
  const [state, setState] = useState<ScreenState>(() => ({
    verificationUrl: start.verificationUrl,
    userCode: start.userCode,
    hostNote: options.hostNote,
    phase: 'waiting',
    deadline: options.deadline,
    qr: options.showQr ? qrFor(start.verificationUrl, stdout) : undefined,
    // Known before the first frame, so the first frame is already complete.
    browserNote: options.browser.open ? 'Opening your browser…' : options.browser.reason ? `Not opening a browser (${options.browser.reason}).` : undefined,
  }));
  const [outcome, setOutcome] = useState<LoginScreenOutcome>();
  const [, setTick] = useState(0);
  const update = (changes: Partial<ScreenState>) => setState((current) => ({ ...current, ...changes }));

  useEffect(() => {
    const ticker = setInterval(() => setTick((n) => n + 1), 1000);
    return () => clearInterval(ticker);
  }, []);

  useEffect(() => {
    // The code and link are on screen before the browser is tried; a failure is a hint.
    if (options.browser.open) {
      void openBrowser(start.verificationUrl, options.browser).then((error) =>
        update({ browserNote: error ? `Could not open a browser (${error}): open the link yourself.` : 'Opened the link in your browser.' }),
      );
    }
    const onEvent = (event: WaitEvent) => {
      if (event.kind === 'waiting') update({ phase: 'waiting', deadline: event.deadline, notice: undefined });
      else if (event.kind === 'slowed-down') update({ notice: `The server asked to poll less often: every ${event.intervalMs / 1000} s.` });
      else update({ phase: 'reconnecting', notice: event.message });
    };
    options.wait(signal, onEvent).then(
      (result) => {
        update({ phase: 'success', outcome: options.approvedText ? options.approvedText(result.user) : `Logged in as ${result.user.name} <${result.user.email}>`, notice: undefined });
        setOutcome({ kind: 'authorized', result });
      },
      (error: unknown) => {
        if (signal.aborted) {
          update({ phase: 'cancelled', outcome: 'Cancelled. Nothing was saved.', notice: undefined });
          setOutcome({ kind: 'cancelled' });
          return;
        }
        const explained = options.explain(error);
        if (explained) update({ phase: 'failed', outcome: explained.message, hint: explained.hint, notice: undefined });
        setOutcome({ kind: 'failed', error, shown: Boolean(explained) });
      },
    );
  }, []);

  useEffect(() => {
    if (outcome) onDone(outcome);
  }, [outcome]);

  const { deadline, ...view } = state;
  return (
    <>
      <LoginView {...view} msLeft={deadline - Date.now()} />
      {stdin.isTTY ? <CancelOnCtrlC onCancel={cancel} /> : null}
    </>
  );
}

/** Runs the wait with the live view, and leaves the final frame on screen. */
export async function runLoginScreen(options: LoginScreenOptions): Promise<LoginScreenOutcome> {
  const cancel = new AbortController();
  const signal = AbortSignal.any([options.signal, cancel.signal]);
  let done!: (outcome: LoginScreenOutcome) => void;
  const ended = new Promise<LoginScreenOutcome>((resolve) => (done = resolve));
  const app = render(<LoginScreen options={options} signal={signal} cancel={() => cancel.abort()} onDone={done} />, {
    stdout: options.stdout,
    stdin: options.stdin,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  try {
    return await ended;
  } finally {
    app.unmount();
    await app.waitUntilExit().catch(() => undefined);
  }
}
