import { CLI_SCOPES, ENV, ERROR_CODES, type Organization, OrganizationSchema, OrgSlugSchema, type SessionFile } from '@prospect/contract';
// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { ApiHttpError } from '../api-client/api-errors.js';
import { sessionTokenRejected } from '../api-client/login-hints.js';
import type { CommandContext } from '../context.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { renewRefusedSession } from '../session/refresh.js';
import { apiClientFor } from '../session/session-context.js';
import type { FlagSpec } from './command.js';

/**
 * What every command that acts for an organization shares (issue #44): `--org <slug>` for one
 * run, the session's organization (`prospect org:switch`) otherwise, sent on every request to the
 * session's server as ORGANIZATION_HEADER (apiClientFor), and the two questions asked of
 * `/api/orgs` with the refusals said in one line.
 */

/** The organization kept in a session: its slug, name and the person's role, as the server said them when chosen. */
export type ActiveOrganization = NonNullable<SessionFile['organization']>;

export const orgFlag: Record<string, FlagSpec> = { org: { type: 'string' } };

/** `--org <slug>`, as each command's help lists it. */
export const ORG_FLAG_USAGE = (what: string) => ['--org <slug>', `${what}, for this run only`] as [string, string];

/** An organization as it is shown: its name and slug, and the person's role. */
export const describeOrganization = (org: Pick<Organization, 'slug' | 'name' | 'role'>) => `${org.name} (${org.slug}), as ${org.role}`;

/** Just what the session keeps of an organization (the server's answer may say more). */
export const activeOrganization = ({ slug, name, role }: Pick<Organization, 'slug' | 'name' | 'role'>): ActiveOrganization => ({ slug, name, role });

/** A slug typed by the person, checked before anything is asked: `Acme` suggests `acme`. */
export function checkedSlug(value: string, what: string): string {
  if (OrgSlugSchema.safeParse(value).success) return value;
  const lower = value.toLowerCase();
  const meant = lower !== value && OrgSlugSchema.safeParse(lower).success ? ` (did you mean ${lower}?)` : '';
  throw usageError(`${what} ${JSON.stringify(value)} is not an organization's slug${meant}: a slug is 2 to 40 lower-case letters, digits or "-"; \`prospect org:list\` shows yours.`);
}

/** `--org`'s slug, checked; undefined when it is not given. */
export function requestedOrg(ctx: Pick<CommandContext, 'flags'>): string | undefined {
  const value = ctx.flags.org;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !value.trim()) throw usageError('--org needs an organization\'s slug, e.g. --org acme (`prospect org:list` shows yours).');
  return checkedSlug(value.trim(), '--org');
}

/**
 * The organization this run acts for, on `apiBaseUrl`: `--org`, else the session's. Every request
 * of the run to that server carries it (session-context.ts apiClientFor).
 */
export function actFor(ctx: CommandContext, apiBaseUrl: string, session: SessionFile | undefined): string | undefined {
  const slug = requestedOrg(ctx) ?? session?.organization?.slug;
  ctx.actingFor = slug ? { apiBaseUrl, slug } : undefined;
  return slug;
}

/** The session's token lacks `orgs` (sessions made before organizations), in one line: what to run to get it. */
function missingOrgsScope(err: ApiHttpError, fromEnv: boolean): CliError {
  if (fromEnv) {
    return new CliError(`The token in ${ENV.token} was not granted the “orgs” scope, which organizations need: make one that has it, or unset ${ENV.token} to use your session.`, EXIT.authRequired);
  }
  // What the session has (X-OAuth-Scopes, on every bearer answer) and `orgs`: nothing it had is lost.
  const had = (err.headers.get('x-oauth-scopes') ?? '').split(',').map((scope) => scope.trim());
  const scopes = CLI_SCOPES.filter((scope) => scope === 'orgs' || had.includes(scope));
  return new CliError(
    `Your session was not granted the “orgs” scope, which organizations need — run \`prospect auth:refresh --scopes ${scopes.join(',')}\`, or sign in again with \`prospect auth:login\`.`,
    EXIT.authRequired,
  );
}

/** The session's organization is no longer the person's: a warning, the command's answer stands. */
export const lostWarning = (slug: string) =>
  `Warning: ${slug}, your active organization, is no longer one of yours — run \`prospect org:switch <slug>\` for another, or \`prospect org:switch --none\`.`;

/** Not a member (or no such organization: the server answers both alike, so slugs cannot be probed). */
export function notYours(slug: string, active: boolean): CliError {
  return active
    ? new CliError(`${slug}, your active organization, is not (or no longer) one of yours — run \`prospect org:switch <slug>\` for another, or \`prospect org:switch --none\`.`)
    : new CliError(`${slug} is not (or no longer) one of your organizations — \`prospect org:list\` shows yours.`);
}

/**
 * `/api/orgs` for the run's credentials (set by the auth guard). A token the server says has
 * expired, whatever this machine's clock says, is renewed once with the session's refresh token
 * and the question asked again, as `prospect api` does; any other refusal is one line.
 */
async function askOrganizations<T>(ctx: CommandContext, path: string, schema: z.ZodMiniType<T>): Promise<T> {
  const credentials = ctx.credentials;
  if (!credentials) throw new CliError('Organizations need a session: run `prospect auth:login`.', EXIT.authRequired);
  const send = async () => (await apiClientFor(ctx, credentials.apiBaseUrl).request('GET', path, { token: ctx.credentials!.accessToken, signal: ctx.signal })).body;
  let body: unknown;
  try {
    try {
      body = await send();
    } catch (err) {
      const session = credentials.source === 'file' ? ctx.session : undefined;
      if (!(err instanceof ApiHttpError && err.tokenProblem === 'expired' && session?.refreshToken)) throw err;
      ctx.session = await renewRefusedSession(ctx, session, err);
      ctx.credentials = { accessToken: ctx.session.accessToken, apiBaseUrl: ctx.session.apiBaseUrl, source: 'file' };
      body = await send();
    }
  } catch (err) {
    if (!(err instanceof ApiHttpError)) throw err;
    if (err.status === 401) throw sessionTokenRejected(err, credentials.apiBaseUrl, { env: ctx.env, fromEnv: credentials.source === 'env', serviceAccount: credentials.serviceAccount });
    if (err.status === 403 && err.code === ERROR_CODES.insufficientScope) throw missingOrgsScope(err, credentials.source === 'env');
    throw err;
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new CliError(`${credentials.apiBaseUrl}${path} answered with an unexpected shape.`, 1, 'Is it a Prospect server that has organizations?');
  return parsed.data;
}

let organizationList: z.ZodMiniArray<typeof OrganizationSchema> | undefined;

/** GET /api/orgs: the person's organizations, with their role in each. */
export const listOrganizations = (ctx: CommandContext): Promise<Organization[]> => askOrganizations(ctx, '/api/orgs', (organizationList ??= z.array(OrganizationSchema)));

/** GET /api/orgs/{slug}: one of the person's organizations; `notYours` when the server says it is not (404). */
export async function findOrganization(ctx: CommandContext, slug: string): Promise<Organization> {
  try {
    return await askOrganizations(ctx, `/api/orgs/${encodeURIComponent(slug)}`, OrganizationSchema);
  } catch (err) {
    if (err instanceof ApiHttpError && err.status === 404) throw notYours(slug, ctx.session?.organization?.slug === slug && requestedOrg(ctx) === undefined);
    throw err;
  }
}

/** What auth:status and auth:whoami say of the organization: the one acted for, and the one chosen that is no longer the person's. */
export interface OrganizationReport {
  organization: ActiveOrganization | null;
  /** The session's organization, which the server says is no longer one of theirs. */
  lost?: string;
}

/**
 * The organization a report shows: `--org`'s, asked of the server; else the session's, as the
 * server said it just now when it did (`/me`'s `organizations`, for a token with `orgs`), else as
 * it was when chosen.
 */
export async function reportedOrganization(ctx: CommandContext, session: SessionFile | undefined, fromServer: Organization[] | undefined): Promise<OrganizationReport> {
  const asked = requestedOrg(ctx);
  if (asked) return { organization: activeOrganization(await findOrganization(ctx, asked)) };
  const kept = session?.organization;
  if (!kept) return { organization: null };
  if (!fromServer) return { organization: kept };
  const now = fromServer.find((org) => org.slug === kept.slug);
  return now ? { organization: activeOrganization(now) } : { organization: null, lost: kept.slug };
}
