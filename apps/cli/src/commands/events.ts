import { DEFAULT_API_BASE_URL, type Event, EVENTS_PAGE_MAX, EVENT_ID_PATTERN, EVENT_TYPES, OrgSlugSchema } from '@prospect/contract';
import { ApiHttpError } from '../api-client/api-errors.js';
import { sessionTokenRejected } from '../api-client/login-hints.js';
import { stripControls } from '../api-client/untrusted-text.js';
import { type CommandContext, requestedApiUrl, writeLine } from '../context.js';
import { realTiming } from '../device-login/device-login-client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { renewRefusedSession } from '../session/refresh.js';
import { apiClientFor } from '../session/session-context.js';
import { apiUrlFlag, type Command } from './command.js';

/** How long `--follow` waits after a page that brought nothing new. */
export const FOLLOW_INTERVAL_MS = 2_000;

/**
 * `prospect events`: the security log as a stream of events (issue #46, docs/events.md), an
 * organization's or the instance's, printed as it pages through with the server's cursor, and
 * followed with `--follow` by asking again with the last cursor. Polling with a cursor rather than
 * a held-open stream (server-sent events): it goes through every proxy and the load balancer as
 * ordinary short requests, any replica answers, and a dropped connection or a restart loses
 * nothing: the next request continues from the cursor.
 */
export const eventsCommand: Command = {
  name: 'events',
  description: 'List and follow security events (an organization’s, or the instance’s)',
  usage: `
  Usage
    $ prospect events [--org <slug>] [--follow] [--types <type,…>] [--after <id>] [--limit <n>] [--json]

  Options
    --org <slug>        An organization's events (you are one of its admins or owners);
                        without it, every event of the instance (administrators, a session
                        with the admin scope)
    --follow, -f        Keep going: ask again every ${FOLLOW_INTERVAL_MS / 1000} s for new events, until Ctrl-C
    --types <list>      Only these event types, comma-separated (docs/events.md lists them)
    --after <id>        Start after this event id (what Ctrl-C or the last line printed says);
                        default: from the oldest event kept
    --limit <n>         Events per request (1 to ${EVENTS_PAGE_MAX}, default 100)
    --json              One JSON object per line (NDJSON), each event as the API answers it
    --api-url <url>     The backend; must be the one you are logged in to

  Without --follow it prints every event up to now and stops. Ctrl-C stops (exit 130) and says
  the --after that continues where it stopped.

  Examples
    $ prospect events --org acme --types user.signed_in,member.added
    $ prospect events --follow --json | jq .type
`,
  flags: {
    org: { type: 'string' },
    follow: { type: 'boolean', shortFlag: 'f', default: false },
    types: { type: 'string' },
    after: { type: 'string' },
    limit: { type: 'number' },
    json: { type: 'boolean', default: false },
    ...apiUrlFlag,
  },
  requiresAuth: true,
  async run(ctx: CommandContext) {
    const org = typeof ctx.flags.org === 'string' ? ctx.flags.org : undefined;
    if (org !== undefined && !OrgSlugSchema.safeParse(org).success) throw usageError(`--org takes an organization's slug (lower-case letters, digits and "-"), not ${JSON.stringify(org)}.`);
    const limit = ctx.flags.limit === undefined ? undefined : Number(ctx.flags.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= EVENTS_PAGE_MAX)) throw usageError(`--limit takes a whole number from 1 to ${EVENTS_PAGE_MAX}.`);
    let after = typeof ctx.flags.after === 'string' ? ctx.flags.after : '';
    if (after && !EVENT_ID_PATTERN.test(after)) throw usageError(`--after takes an event id (evt_…), not ${JSON.stringify(after)}.`);
    const types = typeof ctx.flags.types === 'string' ? ctx.flags.types.split(',').map((t) => t.trim()).filter(Boolean) : [];

    const baseUrl = ctx.credentials?.apiBaseUrl ?? requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL;
    const api = apiClientFor(ctx, baseUrl);
    const path = org ? `/api/orgs/${encodeURIComponent(org)}/events` : '/api/admin/events';
    const fetchPage = async (): Promise<{ events: Event[]; next: string }> => {
      const query = new URLSearchParams({ ...(after ? { after } : {}), ...(types.length ? { types: types.join(',') } : {}), ...(limit ? { limit: String(limit) } : {}) });
      const send = () => api.request('GET', `${path}${query.size ? `?${query}` : ''}`, { token: ctx.credentials?.accessToken, signal: ctx.signal });
      try {
        try {
          return (await send()).body as { events: Event[]; next: string };
        } catch (err) {
          // A follow outlives an access token: the session's is renewed once and the page asked again.
          const session = ctx.credentials?.source === 'file' ? ctx.session : undefined;
          if (!(err instanceof ApiHttpError && err.tokenProblem === 'expired' && session?.refreshToken)) throw err;
          ctx.session = await renewRefusedSession(ctx, session, err);
          ctx.credentials = { accessToken: ctx.session.accessToken, apiBaseUrl: ctx.session.apiBaseUrl, source: 'file' };
          return (await send()).body as { events: Event[]; next: string };
        }
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        if (err instanceof ApiHttpError && err.status === 401 && ctx.credentials) throw sessionTokenRejected(err, api.baseUrl, { env: ctx.env, fromEnv: ctx.credentials.source === 'env', serviceAccount: ctx.credentials.serviceAccount });
        if (err instanceof ApiHttpError && err.status === 403 && !org) throw new CliError(`${err.message} Without --org, \`prospect events\` reads the instance's events, which only administrators may (log in with \`--scopes profile,tokens,admin\`); add --org <slug> for an organization's.`);
        // A refusal (a type the server does not know, an organization that is not yours) is a sentence already; a server error says its status.
        if (err instanceof ApiHttpError && err.status < 500) throw new CliError(err.message);
        if (err instanceof ApiHttpError) throw new CliError(`HTTP ${err.status}${err.code ? ` ${err.code}` : ''}: ${err.message}`);
        throw err;
      }
    };

    // Notes for a person (stderr, so stdout stays the events alone): nothing found, or following.
    const note = (text: string) => ctx.stderr.write(`${text}\n`);
    const given = after;
    let printed = 0;
    let caughtUp = false;
    try {
      for (;;) {
        const { events, next } = await fetchPage();
        for (const event of events) writeLine(ctx.stdout, ctx.flags.json ? JSON.stringify(event) : line(event));
        printed += events.length;
        after = next;
        // A full page: more may be there already. Otherwise caught up: stop, or wait and ask again.
        if (events.length && events.length === (limit ?? 100)) continue;
        if (!ctx.flags.follow) {
          if (!printed && !ctx.flags.json) note(`No events${types.length ? ` of type ${types.join(', ')}` : ''}${org ? ` in ${org}` : ''}${given ? ` after ${given}` : ''}.`);
          return;
        }
        if (!caughtUp && ctx.stderr.isTTY && !ctx.flags.json) note(`${printed ? '' : 'No events yet. '}Waiting for new ones (Ctrl-C stops)…`);
        caughtUp = true;
        await realTiming.sleep(FOLLOW_INTERVAL_MS, ctx.signal);
        if (ctx.signal.aborted) throw ctx.signal.reason;
      }
    } catch (err) {
      if (!ctx.signal.aborted) throw err;
      // Ctrl-C: a clean stop, with where to pick up (stderr: stdout stays the events alone).
      // (Nothing seen and no --after: starting again from the beginning is the same.)
      if (printed || given) ctx.stderr.write(`Stopped. Continue with --after ${after}\n`);
      else ctx.stderr.write('Stopped.\n');
      return EXIT.interrupted;
    }
  },
};

/** The width of the type column: the catalogue's longest type, so that what follows starts at one column. */
const TYPE_WIDTH = Math.max(...EVENT_TYPES.map((type) => type.length));

/**
 * One event in one line for a person: when, what, who, then what it was done to, in which
 * organization and from which address, each named by a word since not every event has them
 * (columns that are sometimes empty would shift), and the id last (for --after). Every text from
 * the server stripped of control characters.
 */
function line(event: Event): string {
  const who = event.actor.type === 'user' ? (event.actor.email ?? `a deleted account (${event.actor.id})`) : 'the system';
  const parts = [
    event.occurredAt.replace(/\.\d+Z$/, 'Z'),
    // A type the catalogue does not know yet (a newer server) is longer at worst: it still ends in two spaces.
    event.type.padEnd(TYPE_WIDTH),
    who,
    // An organization's own event names it once, by its slug, below.
    event.subject && !(event.subject.type === 'organization' && event.subject.id === event.organization?.id) ? `on ${event.subject.type.replace(/_/g, ' ')} ${event.subject.id}` : '',
    event.organization ? `in ${event.organization.slug ?? `a deleted organization (${event.organization.id})`}` : '',
    event.ip ? `from ${event.ip}` : '',
    event.id,
  ];
  return stripControls(parts.filter(Boolean).join('  '));
}
