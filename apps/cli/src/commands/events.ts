import { DEFAULT_API_BASE_URL, type Event, EVENTS_PAGE_MAX, EVENT_ID_PATTERN, OrgSlugSchema } from '@prospect/contract';
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
        if (err instanceof ApiHttpError && err.status === 401 && ctx.credentials) throw sessionTokenRejected(err, api.baseUrl, { env: ctx.env, fromEnv: ctx.credentials.source === 'env' });
        if (err instanceof ApiHttpError && err.status === 403 && !org) throw new CliError(`${err.message} Without --org, \`prospect events\` reads the instance's events, which only administrators may (log in with \`--scopes profile,tokens,admin\`); add --org <slug> for an organization's.`);
        if (err instanceof ApiHttpError) throw new CliError(`HTTP ${err.status}${err.code ? ` ${err.code}` : ''}: ${err.message}`);
        throw err;
      }
    };

    try {
      for (;;) {
        const { events, next } = await fetchPage();
        for (const event of events) writeLine(ctx.stdout, ctx.flags.json ? JSON.stringify(event) : line(event));
        after = next;
        // A full page: more may be there already. Otherwise caught up: stop, or wait and ask again.
        if (events.length && events.length === (limit ?? 100)) continue;
        if (!ctx.flags.follow) return;
        await realTiming.sleep(FOLLOW_INTERVAL_MS, ctx.signal);
        if (ctx.signal.aborted) throw ctx.signal.reason;
      }
    } catch (err) {
      if (!ctx.signal.aborted) throw err;
      // Ctrl-C: a clean stop, with where to pick up (stderr: stdout stays the events alone).
      if (after) ctx.stderr.write(`Stopped. Continue with --after ${after}\n`);
      return EXIT.interrupted;
    }
  },
};

/** One event in one line for a person: when, what, who, to what, where. Every text from the server stripped of control characters. */
function line(event: Event): string {
  const who = event.actor.type === 'user' ? (event.actor.email ?? event.actor.id) : 'system';
  const parts = [
    event.occurredAt.replace(/\.\d+Z$/, 'Z'),
    event.type.padEnd(26),
    who,
    // An organization's own event names it once, by its slug, below.
    event.subject && !(event.subject.type === 'organization' && event.subject.id === event.organization?.id) ? `${event.subject.type}:${event.subject.id}` : '',
    event.organization?.slug ? `org:${event.organization.slug}` : '',
    event.ip ?? '',
    event.id,
  ];
  return stripControls(parts.filter(Boolean).join('  '));
}
