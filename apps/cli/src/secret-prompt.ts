import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError, EXIT } from './errors.js';

/**
 * Reads one line from a terminal without echoing it, as `ssh` and `sudo` read
 * passwords: a pasted token must not stay on the screen or in the scrollback.
 * Node's readline does the line editing (backspace, Ctrl-U) in raw mode and
 * restores the terminal when done; its echo goes to a stream that drops it.
 * Ctrl-C cancels (exit 130, nothing saved); Ctrl-D answers ''.
 */
export function readSecretLine(stdin: NodeJS.ReadStream, stderr: NodeJS.WritableStream, prompt: string): Promise<string> {
  stderr.write(prompt);
  const noEcho = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input: stdin, output: noEcho, terminal: true });
  return new Promise((resolve, reject) => {
    let answer = '';
    let cancelled = false;
    rl.once('line', (line) => {
      answer = line;
      rl.close();
    });
    rl.once('SIGINT', () => {
      cancelled = true;
      rl.close();
    });
    rl.once('close', () => {
      // The Enter (or Ctrl-C) the person pressed was not echoed either.
      stderr.write('\n');
      if (!cancelled) return resolve(answer);
      stderr.write('Cancelled. Nothing was saved.\n');
      reject(new CliError('Cancelled.', EXIT.interrupted).markShown());
    });
  });
}
