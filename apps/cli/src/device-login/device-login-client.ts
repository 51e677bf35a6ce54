import { DevicePollResponseSchema, MAX_DEVICE_LOGIN_SECONDS, ROUTES, type User } from '@prospect/contract';
// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { ApiClient } from '../api-client/api-client.js';
import { ApiHttpError, ApiUnreachableError } from '../api-client/api-errors.js';
import { loginCommandLine, notServedUnderPath } from '../api-client/login-hints.js';
import { CliError } from '../errors.js';

/** What the person needs to approve the login, normalized from the start response. */
export interface DeviceLoginStart {
  deviceCode: string;
  userCode: string;
  verificationUrl: string;
  intervalSeconds: number;
  expiresInSeconds: number;
}

export interface DeviceLoginResult {
  accessToken: string;
  refreshToken?: string;
  expiresAt: string;
  user: User;
}

/** RFC 8628 §3.5: on slow_down, wait 5 s longer between polls from then on. */
export const SLOW_DOWN_STEP_MS = 5_000;
/**
 * While the server is away or unavailable, poll at least this often, so the login
 * resumes within this long of its return. No exponential backoff: one CLI polling
 * every few seconds is no load, and a person is waiting.
 */
export const RECONNECT_RETRY_MS = 5_000;
/**
 * What a server may ask of the CLI's timing, whatever it says: at most a minute between
 * polls (interval, slow_down, Retry-After) and at least a second, and a code lives at most
 * an hour. A bigger number would overflow setTimeout (which then fires at once, in a loop)
 * or show a countdown of years.
 */
const MAX_POLL_INTERVAL_MS = 60_000;
const MIN_POLL_INTERVAL_MS = 1_000;
const clampPollWait = (ms: number) => Math.min(Math.max(ms, MIN_POLL_INTERVAL_MS), MAX_POLL_INTERVAL_MS);

/** Retry-After in milliseconds, when it is a number of seconds (RFC 9110 §10.2.3); clamped like any wait. */
function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get('retry-after')?.trim();
  return value && /^\d+$/.test(value) ? clampPollWait(Number(value) * 1000) : undefined;
}
const CANCEL_TIMEOUT_MS = 2_000;

/** Where the device-login errors' hints point: `prospect auth:login`, for this backend. */
export interface LoginTarget {
  baseUrl: string;
  /** PROSPECT_API_BASE_URL decides whether a bare `prospect auth:login` reaches baseUrl. */
  env?: NodeJS.ProcessEnv;
}

export class DeviceLoginUnsupportedError extends CliError {
  constructor({ baseUrl, env }: LoginTarget) {
    super(
      `Device login is turned off on ${baseUrl}.`,
      1,
      `Log in through your browser: ${loginCommandLine(baseUrl, { env })} --web; or create a token at ${baseUrl}${ROUTES.tokensPage}, then run: ${loginCommandLine(baseUrl, { env, token: true })}`,
    );
  }
}
export class NotProspectServerError extends CliError {
  constructor(baseUrl: string, status: number) {
    super(`${baseUrl} is not a Prospect server (it answered HTTP ${status} to the device-login start).`, 1, 'Check the address: --api-url or PROSPECT_API_BASE_URL.');
  }
}
export class DeviceLoginDeniedError extends CliError {
  constructor({ baseUrl, env }: LoginTarget) {
    super('Login was denied in the browser, or the code expired.', 1, `Run \`${loginCommandLine(baseUrl, { env })}\` to try again.`);
  }
}
export class DeviceLoginTimeoutError extends CliError {
  constructor(readonly reason: 'expired' | 'timeout', seconds: number, { baseUrl, env }: LoginTarget) {
    super(
      reason === 'expired' ? `The code expired after ${seconds} s without approval.` : `Gave up waiting for approval after ${seconds} s.`,
      1,
      `Run \`${loginCommandLine(baseUrl, { env })}\` to get a new code.`,
    );
  }
}

/** What the waiting view shows between polls. */
export type WaitEvent =
  | { kind: 'waiting'; deadline: number }
  | { kind: 'slowed-down'; intervalMs: number }
  /** `message`: the one sentence a person reads while the server is away. */
  | { kind: 'reconnecting'; cause: 'unreachable' | 'unavailable'; retryInMs: number; message: string };

function reconnectMessage(cause: 'unreachable' | 'unavailable', baseUrl: string, retryInMs: number): string {
  const host = new URL(baseUrl).host;
  const seconds = Math.max(1, Math.round(retryInMs / 1000));
  return cause === 'unreachable' ? `Can't reach ${host}; trying again in ${seconds} s.` : `${host} is briefly unavailable; trying again in ${seconds} s.`;
}

export interface Timing {
  now(): number;
  /** Resolves after `ms`, rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realTiming: Timing = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

const httpUrl = z.url({ protocol: /^https?$/ });
const USER_CODE_FORM = /^[A-Za-z0-9]{2,12}-[A-Za-z0-9]{2,12}$/;
const StartVariants = z.object({
  deviceCode: z.string().check(z.minLength(1)),
  userCode: z.string().check(z.minLength(1)),
  verificationUrl: z.optional(z.string()),
  verificationUri: z.optional(z.string()),
  intervalSeconds: z.int().check(z.positive()),
  expiresInSeconds: z.int().check(z.positive()),
});

/**
 * Accepts `verificationUri` for `verificationUrl` (seed §2.2); refuses anything but http(s).
 * `target`: the backend that answered, for the hints (none: a bare `prospect auth:login`).
 */
export function normalizeStartResponse(body: unknown, target?: LoginTarget): DeviceLoginStart {
  const tokenLogin = `Try \`${loginCommandLine(target?.baseUrl, { env: target?.env, token: true })}\` instead.`;
  const parsed = StartVariants.safeParse(body);
  const url = parsed.success ? (parsed.data.verificationUrl ?? parsed.data.verificationUri) : undefined;
  if (!parsed.success || !url) {
    const field = parsed.success ? 'verificationUrl' : parsed.error.issues[0]!.path.join('.') || 'body';
    throw new CliError(`The server's device-login answer is incomplete or malformed (${field}).`, 1, tokenLogin);
  }
  if (!httpUrl.safeParse(url).success) {
    throw new CliError(`Refusing to send you to ${JSON.stringify(url)}: not an http(s) address.`);
  }
  const { deviceCode, userCode, intervalSeconds, expiresInSeconds } = parsed.data;
  // The code a person compares with the browser: letters and digits in two groups (seed §2.2), nothing else.
  if (!USER_CODE_FORM.test(userCode)) {
    throw new CliError(`The server sent a user code that is not of the form XXXX-XXXX: ${JSON.stringify(userCode)}.`, 1, tokenLogin);
  }
  // Shown as parsed, so what is printed is the address the browser will open.
  return {
    deviceCode,
    userCode,
    verificationUrl: new URL(url).href,
    intervalSeconds: clampPollWait(intervalSeconds * 1000) / 1000,
    expiresInSeconds: Math.min(expiresInSeconds, MAX_DEVICE_LOGIN_SECONDS),
  };
}

/**
 * The device flow (RFC 8628) as plain async code: it prints nothing; the
 * caller renders the events. It retries through dropped connections and a
 * restarting server until its deadline.
 */
export class DeviceLoginClient {
  constructor(
    private readonly api: ApiClient,
    private readonly timing: Timing = realTiming,
    /** The environment of the command, for the hints (see LoginTarget). */
    private readonly env?: NodeJS.ProcessEnv,
  ) {}

  private get target(): LoginTarget {
    return { baseUrl: this.api.baseUrl, env: this.env };
  }

  async start(client: { clientName: string; hostname: string }, signal?: AbortSignal): Promise<DeviceLoginStart> {
    try {
      const { body } = await this.api.request('POST', ROUTES.deviceStart, { body: client, signal });
      return normalizeStartResponse(body, this.target);
    } catch (err) {
      if (err instanceof ApiHttpError && [404, 405, 501].includes(err.status)) {
        // Nothing under a base URL with a path: the service is elsewhere, most likely at the origin.
        const elsewhere = notServedUnderPath(this.api.baseUrl, ROUTES.deviceStart, err.status, { env: this.env });
        if (elsewhere) throw elsewhere;
        // A Prospect server answers its own error body: then device login is turned off there.
        if (err.code === undefined) throw new NotProspectServerError(this.api.baseUrl, err.status);
        throw new DeviceLoginUnsupportedError(this.target);
      }
      throw err;
    }
  }

  /**
   * Tells the server this terminal stopped waiting (Ctrl-C, a timeout), so the code can no
   * longer be approved. Best effort and quick: it never delays or changes how the CLI exits.
   */
  async cancel(start: DeviceLoginStart): Promise<void> {
    await this.api.request('POST', ROUTES.deviceCancel, { body: { deviceCode: start.deviceCode }, timeoutMs: CANCEL_TIMEOUT_MS }).catch(() => undefined);
  }

  async waitForAuthorization(
    start: DeviceLoginStart,
    options: { signal?: AbortSignal; timeoutSeconds?: number; onEvent?: (event: WaitEvent) => void } = {},
  ): Promise<DeviceLoginResult> {
    const { signal, onEvent } = options;
    const waitSeconds = Math.min(options.timeoutSeconds ?? Infinity, start.expiresInSeconds);
    const deadlineReason = waitSeconds < start.expiresInSeconds ? 'timeout' : 'expired';
    const deadline = this.timing.now() + waitSeconds * 1000;
    let intervalMs = start.intervalSeconds * 1000;
    let failures = 0;
    let delayMs = intervalMs;
    onEvent?.({ kind: 'waiting', deadline });

    for (;;) {
      const remaining = deadline - this.timing.now();
      if (remaining <= 0) throw new DeviceLoginTimeoutError(deadlineReason, waitSeconds, this.target);
      await this.timing.sleep(Math.min(delayMs, remaining), signal);
      // A sleep that ran to the deadline ends the wait, whatever the clock reads: Node's timers count
      // from the event loop's cached time, so one may fire a few ms before Date.now() gets there.
      if (delayMs >= remaining || this.timing.now() >= deadline) throw new DeviceLoginTimeoutError(deadlineReason, waitSeconds, this.target);
      delayMs = intervalMs;
      try {
        const { body } = await this.api.request('POST', ROUTES.devicePoll, { body: { deviceCode: start.deviceCode }, signal });
        if (failures > 0) onEvent?.({ kind: 'waiting', deadline });
        failures = 0;
        const answer = DevicePollResponseSchema.safeParse(body);
        if (!answer.success) throw new CliError('The server answered the poll with an unexpected shape.');
        if (answer.data.status === 'denied') throw new DeviceLoginDeniedError(this.target);
        if (answer.data.status === 'authorized') {
          const { accessToken, refreshToken, expiresAt, user } = answer.data;
          return { accessToken, refreshToken, expiresAt, user };
        }
      } catch (err) {
        if (err instanceof ApiHttpError && err.status === 429) {
          intervalMs = clampPollWait(Math.max(intervalMs + SLOW_DOWN_STEP_MS, retryAfterMs(err.headers) ?? 0));
          delayMs = intervalMs;
          onEvent?.({ kind: 'slowed-down', intervalMs });
        } else if (err instanceof ApiUnreachableError || (err instanceof ApiHttpError && err.status >= 500)) {
          failures += 1;
          // A 503 says when to come back (Retry-After); never later than RECONNECT_RETRY_MS.
          delayMs = Math.min((err instanceof ApiHttpError ? retryAfterMs(err.headers) : undefined) ?? intervalMs, RECONNECT_RETRY_MS);
          const cause = err instanceof ApiUnreachableError ? 'unreachable' : 'unavailable';
          onEvent?.({ kind: 'reconnecting', cause, retryInMs: delayMs, message: reconnectMessage(cause, this.api.baseUrl, delayMs) });
        } else {
          throw err;
        }
      }
    }
  }
}
