import { runCli } from './cli.js';
import { EXIT } from './errors.js';

const controller = new AbortController();
// Outside Ink (plain output, --token), Ctrl-C is a signal: stop, save nothing, exit 130.
process.once('SIGINT', () => {
  controller.abort();
  setTimeout(() => process.exit(EXIT.interrupted), 2_000).unref();
});

// Past a file-size limit (ulimit -f) a write fails with EFBIG, which is then said in one line.
// Node ignores SIGXFSZ for that, but signal-exit (which Ink loads for the login screen) listens
// for it and re-raises it when it is the only listener, which would kill prospect in the middle
// of saving the session: this listener keeps it from ever being the only one.
process.on('SIGXFSZ', () => undefined);

// A reader that stops early (`prospect api … | head -1`) closes the pipe: stop quietly, as git and
// gh do, instead of an unhandled EPIPE's stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(EXIT.ok);
});

void runCli(process.argv.slice(2), {
  env: process.env,
  // Getters: each stdio stream costs startup time to create, and most runs never touch stderr or stdin.
  stdout: process.stdout,
  get stderr() {
    return process.stderr;
  },
  get stdin() {
    return process.stdin;
  },
  signal: controller.signal,
}).then((code) => {
  process.exitCode = code;
  // Lingering handles (a keep-alive socket, stdin) must not hold the shell.
  setTimeout(() => process.exit(code), 50).unref();
});
