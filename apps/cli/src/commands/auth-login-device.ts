import { hostname } from 'node:os';
import type { DeviceStartRequest, Scope } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { type CommandContext, writeLine } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { clock } from '../format.js';
import { VERSION } from '../version.js';
import { decideBrowser } from '../device-login/browser.js';
import { DeviceLoginClient, DeviceLoginDeniedError, type DeviceLoginResult, type DeviceLoginStart, type WaitEvent } from '../device-login/device-login-client.js';

/**
 * `prospect auth:login` without --token (RFC 8628): code and link first,
 * browser second, then wait. A person at a terminal gets the Ink view;
 * pipes and CI get plain lines without spinner or escape codes. The flow
 * itself (device-login/) prints nothing: this is where it is shown.
 */
export async function runDeviceLogin(
  ctx: CommandContext,
  api: ApiClient,
  timeoutSeconds: number | undefined,
  scopes?: Scope[],
  approvedText?: (user: DeviceLoginResult['user']) => string,
): Promise<DeviceLoginResult> {
  const device = new DeviceLoginClient(api, undefined, ctx.env);
  // The scopes only when asked for (`--scopes`): without them the server grants its default, and
  // a server from before `scopes` (whose start refuses unknown fields) still takes the start.
  const request = { clientName: `prospect CLI ${VERSION}`, hostname: hostname(), ...(scopes ? { scopes } : {}) } satisfies DeviceStartRequest;
  const start = await device.start(request, ctx.signal);
  const hostNote = otherHostNote(api.baseUrl, start.verificationUrl);
  const browser = decideBrowser({ interactive: ctx.interactive, requested: ctx.flags.browser !== false, env: ctx.env, platform: process.platform });

  if (ctx.interactive) {
    const { runLoginScreen } = await import('../ui/login-screen.js');
    const outcome = await runLoginScreen({
      start,
      hostNote,
      browser,
      showQr: ctx.flags.qr !== false,
      deadline: Date.now() + Math.min(timeoutSeconds ?? Infinity, start.expiresInSeconds) * 1000,
      wait: (signal, onEvent) => device.waitForAuthorization(start, { signal, timeoutSeconds, onEvent }),
      explain: (error) => (error instanceof CliError ? { message: error.message, hint: error.hint } : undefined),
      signal: ctx.signal,
      stdout: ctx.stdout,
      stdin: ctx.stdin,
      approvedText,
    });
    if (outcome.kind === 'authorized') return outcome.result;
    await cancelUnlessDenied(device, start, outcome.kind === 'cancelled' ? undefined : outcome.error);
    // On screen already: only the exit code is left to set.
    if (outcome.kind === 'cancelled') throw new CliError('Cancelled. Nothing was saved.', EXIT.interrupted).markShown();
    throw outcome.shown && outcome.error instanceof CliError ? outcome.error.markShown() : outcome.error;
  }
  printPlainInstructions(ctx, start, hostNote);
  try {
    return await device.waitForAuthorization(start, { signal: ctx.signal, timeoutSeconds, onEvent: (event) => printPlainEvent(ctx, event) });
  } catch (err) {
    await cancelUnlessDenied(device, start, ctx.signal.aborted ? undefined : err);
    throw err;
  }
}

/** Stopped waiting for any reason but the person's own denial: the code must not stay approvable. */
async function cancelUnlessDenied(device: DeviceLoginClient, start: DeviceLoginStart, error: unknown): Promise<void> {
  if (!(error instanceof DeviceLoginDeniedError)) await device.cancel(start);
}

function printPlainInstructions(ctx: CommandContext, start: DeviceLoginStart, hostNote: string | undefined): void {
  writeLine(ctx.stdout, `To log in, open ${start.verificationUrl}`);
  writeLine(ctx.stdout, `and check that it shows the code ${start.userCode}`);
  writeLine(ctx.stdout, `(you are signing in to ${new URL(start.verificationUrl).host})`);
  if (hostNote) writeLine(ctx.stdout, hostNote);
}

/**
 * The CLI never rewrites the server's verification URL (a server may well keep its pages on
 * another name than its API); when the names differ, it says so, since a browser signed in on
 * one name is not signed in on the other.
 */
export function otherHostNote(apiBaseUrl: string, verificationUrl: string): string | undefined {
  const [api, page] = [new URL(apiBaseUrl), new URL(verificationUrl)];
  if (api.origin === page.origin) return undefined;
  return `Note: the server sends you to ${page.host} to approve, not ${api.host} as given (its PUBLIC_URL); your browser signs in there.`;
}

function printPlainEvent(ctx: CommandContext, event: WaitEvent): void {
  if (event.kind === 'waiting') writeLine(ctx.stderr, `Waiting for approval (${clock(event.deadline - Date.now())} left)…`);
  if (event.kind === 'slowed-down') writeLine(ctx.stderr, `The server asked to poll less often: every ${event.intervalMs / 1000} s.`);
  if (event.kind === 'reconnecting') writeLine(ctx.stderr, event.message);
}
