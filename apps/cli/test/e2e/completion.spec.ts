/**
 * The bash completion script in bash itself, in a real terminal (tmux): a person types part of a
 * command, presses Tab, and reads the line. bash splits words at ':' (COMP_WORDBREAKS), which
 * a naive script gets wrong for every `auth:*` command.
 */
import { assertBuilt, PROSPECT_JS } from '../support/run-cli.js';
import { Tmux } from '../support/tmux.js';

let terminal: Tmux;
beforeAll(async () => {
  assertBuilt();
  terminal = new Tmux();
  terminal.run('new-session', '-d', '-s', 'bash', '-x', '120', '-y', '30', 'env', '-i', `PATH=${process.env.PATH}`, 'PS1=$ ', 'TERM=xterm', 'bash', '--norc', '--noprofile');
  terminal.run('send-keys', '-t', 'bash', '-l', `eval "$('${process.execPath}' '${PROSPECT_JS}' completion bash)" && clear`);
  terminal.run('send-keys', '-t', 'bash', 'Enter');
  await terminal.waitForScreen(/^\$$/m, 'bash');
});
afterAll(() => terminal?.kill());

/** Types `typed`, presses Tab (twice for a list), and answers the screen up to the prompt line then shown; clears the line after. */
async function complete(typed: string, tabs = 1): Promise<string> {
  terminal.run('send-keys', '-t', 'bash', 'C-l');
  terminal.run('send-keys', '-t', 'bash', '-l', typed);
  await terminal.waitForScreen(new RegExp(`^\\$ ${typed.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}`, 'm'), 'bash');
  const typedScreen = terminal.screen('bash', true);
  for (let i = 0; i < tabs; i++) terminal.run('send-keys', '-t', 'bash', 'Tab');
  // Every case changes the screen (a completed word, or a list): wait for that, bounded.
  const until = Date.now() + 10_000;
  let shown = typedScreen;
  while (shown === typedScreen && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    shown = terminal.screen('bash', true);
  }
  terminal.run('send-keys', '-t', 'bash', 'C-u');
  // The prompt line, with the space bash adds after a completed word; the rows below it are empty.
  const lines = shown.split('\n');
  const prompt = lines.findLastIndex((line) => line.startsWith('$ '));
  return lines.slice(0, prompt + 1).join('\n');
}

it.each([
  ['prospect auth:wh', '$ prospect auth:whoami '],
  ['prospect auth:sta', '$ prospect auth:status '],
  ['prospect auth:sw', '$ prospect auth:switch '],
  ['prospect auth:ref', '$ prospect auth:refresh '],
  ['prospect auth:refresh --sc', '$ prospect auth:refresh --scopes '],
  ['prospect auth:switch --u', '$ prospect auth:switch --user '],
  ['prospect auth:logout --ho', '$ prospect auth:logout --host '],
  ['prospect auth:whoami --v', '$ prospect auth:whoami --verify '],
  ['prospect auth:login --api', '$ prospect auth:login --api-url '],
  ['prospect auth:login --serv', '$ prospect auth:login --service-account '],
  ['prospect auth:login --fed', '$ prospect auth:login --federated-token '],
  ['prospect auth:login --no-st', '$ prospect auth:login --no-store '],
  ['prospect auth:login --no-b', '$ prospect auth:login --no-browser '],
  ['prospect auth:lo', '$ prospect auth:log'],
  ['prospect org:sw', '$ prospect org:switch '],
  ['prospect org:l', '$ prospect org:list '],
  ['prospect org:switch --n', '$ prospect org:switch --none '],
  ['prospect api --o', '$ prospect api --org '],
  ['prospect auth:status --or', '$ prospect auth:status --org '],
  ['prospect comp', '$ prospect completion '],
  ['prospect completion z', '$ prospect completion zsh '],
  ['prospect help auth:to', '$ prospect help auth:token '],
  ['npx prospect auth:wh', '$ npx prospect auth:whoami '],
  ['npx pros', '$ npx prospect '],
])('completes %j to %j', async (typed, line) => {
  const shown = await complete(typed);
  expect(shown.split('\n').at(-1)).toBe(line);
});

it('lists the organization commands after `org:`', async () => {
  const shown = await complete('prospect org:', 2);
  expect(shown).toMatch(/list\s+switch/);
  expect(shown.split('\n').at(-1)).toBe('$ prospect org:');
});

it('lists the auth commands after `auth:` without repeating the part already typed', async () => {
  const shown = await complete('prospect auth:', 2);
  expect(shown).toMatch(/login\s+logout\s+refresh\s+status\s+switch\s+token\s+whoami/);
  expect(shown.split('\n').at(-1)).toBe('$ prospect auth:');
});
