import { DEFAULT_API_BASE_URL, IDEMPOTENCY_KEY_HEADER, ORGANIZATION_HEADER, ROUTES } from '@prospect/contract';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ApiHttpError, ApiUnreachableError } from '../api-client/api-errors.js';
import { sessionTokenRejected } from '../api-client/login-hints.js';
import { realTiming } from '../device-login/device-login-client.js';
import { renewRefusedSession } from '../session/refresh.js';
import { stripControls } from '../api-client/untrusted-text.js';
import { type CommandContext, requestedApiUrl, writeLine } from '../context.js';
import { apiClientFor } from '../session/session-context.js';
import { CliError, usageError } from '../errors.js';
import { apiUrlFlag, type Command } from './command.js';
import { orgFlag } from './organization-choice.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `prospect api <path>`: an authenticated request to the session's backend, like `gh api`. */
export const apiCommand: Command = {
  name: 'api',
  description: 'Make an authenticated request to the Prospect API and print the JSON',
  usage: `
  Usage
    $ prospect api <path> [-X <method>] [-H 'Name: value'] [-f key=value | -d <json> | --input <file>] [-i]

  Options
    --method, -X <method>     HTTP method (default GET, or POST when there is a body)
    --header, -H <name:value> A request header; repeat for more. Not Authorization: the token
                              comes from your session (or PROSPECT_TOKEN)
    --field, -f <key=value>   A string field of a JSON object body; repeat for more
    --data, -d <json>         The request body, as JSON
    --input <file>            The request body, as JSON read from a file (- for stdin)
    --include, -i             Print the HTTP status line and the response headers first
    --org <slug>              Act for this organization: sent as the Prospect-Organization
                              header (default: the one \`prospect org:switch\` chose, if any)
    --api-url <url>           The backend; must be the one you are logged in to

  The answer is printed as indented JSON at a terminal, and as one line of JSON
  otherwise (for pipes and scripts).

  Creating a token (POST /api/cli/auth/token) sends an Idempotency-Key (or yours,
  from -H), and sends the request again with it when the answer is lost: the
  server answers the same key with the same token, so none is made twice.

  Examples
    $ prospect api /api/cli/auth/me
    $ prospect api -i /api/cli/auth/token -f label=ci
`,
  flags: {
    method: { type: 'string', shortFlag: 'X' },
    header: { type: 'string', shortFlag: 'H', isMultiple: true },
    field: { type: 'string', shortFlag: 'f', isMultiple: true },
    data: { type: 'string', shortFlag: 'd' },
    input: { type: 'string' },
    include: { type: 'boolean', shortFlag: 'i', default: false },
    ...orgFlag,
    ...apiUrlFlag,
  },
  positional: 1,
  requiresAuth: true,
  async run(ctx: CommandContext) {
    const [path, ...extra] = ctx.input;
    if (!path || extra.length) throw usageError('Give exactly one path, e.g. `prospect api /api/cli/auth/me`.');
    if (!path.startsWith('/')) throw usageError(`The path must start with "/": ${JSON.stringify(path)}.`);
    const headers = strings(ctx.flags.header).map(parseHeader);
    if (ctx.flags.org !== undefined && headers.some(([name]) => name.toLowerCase() === ORGANIZATION_HEADER.toLowerCase())) {
      throw usageError(`--org and -H ${ORGANIZATION_HEADER} say the same thing: give one.`);
    }
    const body = await requestBody(ctx);
    const method = typeof ctx.flags.method === 'string' ? ctx.flags.method.toUpperCase() : body === undefined ? 'GET' : 'POST';
    if (!METHODS.includes(method)) throw usageError(`Unknown --method ${JSON.stringify(ctx.flags.method)}: use one of ${METHODS.join(', ')}.`);
    // fetch refuses a GET with a body, which would otherwise read as a network failure.
    if (method === 'GET' && body !== undefined) throw usageError('A GET request carries no body: drop --data, --input or -f, or use -X POST.');
    // Only PROSPECT_SKIP_AUTH=1 gets here without credentials.
    const baseUrl = ctx.credentials?.apiBaseUrl ?? requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL;
    const api = apiClientFor(ctx, baseUrl);
    const tokenCreation = createsToken(method, path);
    // One key for this invocation, the same on every send of it (the retries below, the one after a renewal).
    if (tokenCreation && !headers.some(([name]) => name.toLowerCase() === IDEMPOTENCY_KEY_HEADER.toLowerCase())) {
      headers.push([IDEMPOTENCY_KEY_HEADER, `"${randomUUID()}"`]);
    }
    const sendOnce = () => api.request(method, path, { body, headers, token: ctx.credentials?.accessToken, signal: ctx.signal });
    const send = tokenCreation ? () => sendAgainWhenSafe(ctx, sendOnce) : sendOnce;
    let res;
    try {
      try {
        res = await send();
      } catch (err) {
        // The server says the token expired, whatever this machine's clock says: a session's
        // token is renewed once and the request sent again (a 401 did nothing on the server).
        const session = ctx.credentials?.source === 'file' ? ctx.session : undefined;
        if (!(err instanceof ApiHttpError && err.tokenProblem === 'expired' && session?.refreshToken)) throw err;
        ctx.session = await renewRefusedSession(ctx, session, err);
        ctx.credentials = { accessToken: ctx.session.accessToken, apiBaseUrl: ctx.session.apiBaseUrl, source: 'file' };
        res = await send();
      }
    } catch (err) {
      const credentials = ctx.credentials;
      // -i shows the head of every answer, an error's too (as gh does), before the one error line.
      if (err instanceof ApiHttpError && ctx.flags.include) writeHead(ctx, err.status, err.statusText, err.headers);
      if (err instanceof ApiHttpError && err.status === 401 && credentials) throw sessionTokenRejected(err, api.baseUrl, { env: ctx.env, fromEnv: credentials.source === 'env', serviceAccount: credentials.serviceAccount });
      // The status is what a script or a person debugging a call needs first.
      // A redirect's message names its status already (api-client/api-errors.ts).
      if (err instanceof ApiHttpError) throw new CliError(err.message.includes(`(HTTP ${err.status})`) ? err.message : `HTTP ${err.status}${err.code ? ` ${err.code}` : ''}: ${err.message}`);
      throw err;
    }
    if (ctx.flags.include) writeHead(ctx, res.status, res.statusText, res.headers);
    // Indented for a person; one line for a pipe, so scripts get stable output (as gh does).
    if (res.body !== undefined) writeLine(ctx.stdout, ctx.stdout.isTTY ? JSON.stringify(res.body, null, 2) : JSON.stringify(res.body));
  },
};

/**
 * `POST /api/cli/auth/token`: a token made twice is a live secret nobody holds (issue #32), so the
 * request carries an Idempotency-Key, and the server answers the same key with the same token.
 * Express matches routes ignoring case and a trailing slash; so does this.
 */
function createsToken(method: string, path: string): boolean {
  const route = path.split(/[?#]/, 1)[0]!.replace(/\/+$/, '').toLowerCase();
  return method === 'POST' && route === ROUTES.issueToken.toLowerCase();
}

/** Sends of one token creation in all, when its answer is lost or its key is busy. */
const TOKEN_CREATION_SENDS = 3;
/** The longest a send waits for a busy key (the server's Retry-After, 1 s). */
const BUSY_KEY_WAIT_MAX_MS = 5_000;

/**
 * Sends a token creation, and again, with the same Idempotency-Key, when that is safe and may
 * help: its answer was lost (the connection dropped or timed out, or a proxy answered 502 or 504
 * because the server died before answering: the token may exist, and the same key gets it), or the
 * key is busy (409: the same request is still under way on the server; its answer comes next).
 * Any other answer is final. At most TOKEN_CREATION_SENDS sends.
 */
async function sendAgainWhenSafe<T>(ctx: CommandContext, send: () => Promise<T>): Promise<T> {
  for (let sent = 1; ; sent++) {
    try {
      return await send();
    } catch (err) {
      const lost = err instanceof ApiUnreachableError || (err instanceof ApiHttpError && (err.status === 502 || err.status === 504));
      const busy = err instanceof ApiHttpError && err.status === 409;
      if ((!lost && !busy) || sent >= TOKEN_CREATION_SENDS || ctx.signal.aborted) throw err;
      if (busy) await realTiming.sleep(Math.min(BUSY_KEY_WAIT_MAX_MS, 1000 * Math.max(1, Number(err.headers.get('retry-after')) || 1)), ctx.signal);
    }
  }
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** RFC 9110 §5.6.2: what a header name may hold. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What fetch cannot send in a value: control characters but tab, and anything past Latin-1. */
const UNSENDABLE_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]|[^\u0000-\u00ff]/;
/** Headers the HTTP client writes itself: fetch drops or refuses them, which would read as a network error. */
const SET_BY_THE_CLIENT = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect']);

/**
 * `-H 'Name: value'`, checked before anything is sent. Errors name the header,
 * never quote its value: a value is often a secret.
 */
function parseHeader(raw: string): [string, string] {
  if (/[\r\n]/.test(raw)) throw usageError('-H: a header cannot hold a line break (CR or LF).');
  const colon = raw.indexOf(':');
  if (colon < 0) throw usageError('-H takes "Name: value", e.g. -H "Accept: application/json"; one has no colon.');
  const name = raw.slice(0, colon).trim();
  const value = raw.slice(colon + 1).trim();
  if (!name) throw usageError('-H: the header name before the colon is empty.');
  if (!HEADER_NAME.test(name)) throw usageError(`-H: ${JSON.stringify(name)} is not a valid header name.`);
  if (UNSENDABLE_VALUE.test(value)) throw usageError(`-H ${name}: the value holds a control character or a character a header cannot carry.`);
  if (name.toLowerCase() === 'authorization') {
    throw usageError('-H cannot set Authorization: prospect api sends the token of your session (or PROSPECT_TOKEN).');
  }
  if (SET_BY_THE_CLIENT.has(name.toLowerCase())) throw usageError(`-H cannot set ${name}: the HTTP client sets it.`);
  return [name, value];
}

/** The request body, from at most one of --data, --input and -f; undefined when none is given. */
async function requestBody(ctx: CommandContext): Promise<unknown> {
  const fields = strings(ctx.flags.field);
  const { data, input } = ctx.flags;
  const given = [typeof data === 'string' && '--data', typeof input === 'string' && '--input', fields.length > 0 && '-f'].filter(Boolean);
  if (given.length > 1) throw usageError(`${given.slice(0, -1).join(', ')} and ${given.at(-1)} cannot be combined: give the request body one way.`);
  if (typeof data === 'string') return parseJson(data, '--data must be JSON, e.g. --data \'{"label": "ci"}\'.');
  if (typeof input === 'string') return parseJson(await readInput(ctx, input), `--input ${input === '-' ? '- (stdin)' : JSON.stringify(input)} is not JSON.`);
  if (fields.length) return fieldsBody(fields);
  return undefined;
}

function parseJson(text: string, refusal: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the text, which may span lines.
    throw usageError(refusal);
  }
}

async function readInput(ctx: CommandContext, file: string): Promise<string> {
  if (!file) throw usageError('--input takes a file name, or - for stdin.');
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw usageError(`--input: cannot read ${JSON.stringify(file)} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}).`);
  }
}

/** `-f key=value …` as one JSON object of strings (like gh's -f). */
function fieldsBody(fields: string[]): Record<string, string> {
  const entries = new Map<string, string>();
  for (const field of fields) {
    const equals = field.indexOf('=');
    if (equals < 0) throw usageError(`-f takes key=value, not ${JSON.stringify(field)}.`);
    if (equals === 0) throw usageError('-f: the field name before the "=" is empty.');
    const key = field.slice(0, equals);
    if (entries.has(key)) throw usageError(`-f ${key} is given twice.`);
    entries.set(key, field.slice(equals + 1));
  }
  // fromEntries, not assignment: a key named __proto__ stays a field.
  return Object.fromEntries(entries);
}

/**
 * `-i`: the status line and the headers, then a blank line, as on the wire. The
 * server's reason phrase and values are stripped of control characters like
 * everything else it says.
 */
function writeHead(ctx: CommandContext, status: number, statusText: string, headers: Headers): void {
  // Node's fetch speaks HTTP/1.1 (it does not negotiate HTTP/2 unless told to).
  writeLine(ctx.stdout, `HTTP/1.1 ${status}${statusText ? ` ${stripControls(statusText)}` : ''}`);
  headers.forEach((value, name) => writeLine(ctx.stdout, `${name}: ${stripControls(value)}`));
  writeLine(ctx.stdout);
}
