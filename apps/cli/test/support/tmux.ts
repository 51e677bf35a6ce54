import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const TMUX = ['/usr/bin/tmux', '/usr/local/bin/tmux', '/opt/homebrew/bin/tmux'].find((path) => existsSync(path));

/**
 * A tmux server of a test's own: real terminals to run the CLI (or a shell) in and read, as a
 * person would. tmux is installed by .ci/run; without it a test fails saying so.
 */
export class Tmux {
  private readonly server = `prospect-cli-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

  constructor() {
    if (!TMUX) throw new Error('tmux is needed for this test (apt-get install tmux; .ci/run installs it).');
  }

  run(...args: string[]): string {
    return execFileSync(TMUX!, ['-L', this.server, ...args], { encoding: 'utf8' });
  }

  /** What the window shows now; `keepTrailingSpaces` keeps what tmux trims by default (a completed word's space). */
  screen(session: string, keepTrailingSpaces = false): string {
    return this.run('capture-pane', '-p', ...(keepTrailingSpaces ? ['-N'] : []), '-t', session);
  }

  /** Waits (bounded) until the screen matches; returns the screen and the match's groups. */
  async waitForScreen(pattern: RegExp, session: string, timeoutMs = 20_000): Promise<[string, ...Array<string | undefined>]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const shown = this.screen(session);
      const match = pattern.exec(shown);
      if (match) return [shown, ...match.slice(1)];
      if (Date.now() > until) throw new Error(`the screen never showed ${pattern}:\n${this.screen(session)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  kill(): void {
    try {
      this.run('kill-server');
    } catch {
      // already gone
    }
  }
}
