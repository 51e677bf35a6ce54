import { runCli } from './cli.js';
import { EXIT } from './errors.js';

const controller = new AbortController();
// Outside Ink (plain output, --token), Ctrl-C is a signal: stop, save nothing, exit 130.
process.once('SIGINT', () => {
  controller.abort();
  setTimeout(() => process.exit(EXIT.interrupted), 2_000).unref();
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
