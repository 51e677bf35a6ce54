import { CLI_DEFAULT_SCOPES, type Scope } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { type CommandContext, writeLine } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { decideBrowser, openBrowser } from '../device-login/browser.js';
import { startLoopbackLogin, type WebLoginTokens } from '../web-login/loopback-login.js';

/** How long `--web` waits for the browser unless --timeout-seconds says otherwise. */
const DEFAULT_WEB_TIMEOUT_SECONDS = 300;

/**
 * `prospect auth:login --web`: the browser signs in and comes back to a listener of this process
 * on 127.0.0.1 (web-login/loopback-login.ts). The link is printed first, then the browser opened
 * when this terminal can open one (as for device login), so a person can always copy it.
 */
export async function runWebLogin(ctx: CommandContext, api: ApiClient, timeoutSeconds: number | undefined, scopes: Scope[] | undefined): Promise<WebLoginTokens> {
  // The browser comes back to 127.0.0.1 of the machine it runs on: over SSH, without a display
  // here, that is the person's own machine, where nothing listens.
  const overSsh = Boolean(ctx.env.SSH_CONNECTION || ctx.env.SSH_CLIENT || ctx.env.SSH_TTY);
  if (overSsh && !ctx.env.DISPLAY && !ctx.env.WAYLAND_DISPLAY) {
    throw new CliError(
      '--web cannot work over SSH: your browser would come back to 127.0.0.1 of your own machine, not this one.',
      1,
      'Use device login instead, which works from anywhere: prospect auth:login (without --web).',
    );
  }
  if (scopes?.includes('admin')) throw usageError('--web cannot ask for admin: administration is asked for in a device login (prospect auth:login --scopes …,admin) and approved in sudo mode.');

  const login = await startLoopbackLogin(api, {
    scopes: scopes ?? CLI_DEFAULT_SCOPES,
    timeoutMs: (timeoutSeconds ?? DEFAULT_WEB_TIMEOUT_SECONDS) * 1000,
    signal: ctx.signal,
  });
  try {
    writeLine(ctx.stderr, `To log in to ${new URL(api.baseUrl).host}, open this link in your browser:`);
    writeLine(ctx.stderr, `  ${login.authorizeUrl}`);
    const browser = decideBrowser({ interactive: ctx.interactive, requested: ctx.flags.browser !== false, env: ctx.env, platform: process.platform });
    if (browser.open) {
      const failed = await openBrowser(login.authorizeUrl, browser);
      writeLine(ctx.stderr, failed ? `Could not open a browser (${failed}): open the link yourself.` : 'Opened it in your browser.');
    }
    writeLine(ctx.stderr, `Waiting for the browser to come back to ${login.redirectUri} (up to ${timeoutSeconds ?? DEFAULT_WEB_TIMEOUT_SECONDS} s)…`);
    return await login.result;
  } finally {
    login.close();
  }
}
