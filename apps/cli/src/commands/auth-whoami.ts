import { DEFAULT_API_BASE_URL, ENV, type Organization, type SessionFile } from '@prospect/contract';
import { normalizeBaseUrl } from '../api-client/base-url.js';
import { loginCommandLine, sessionTokenRejected } from '../api-client/login-hints.js';
import { type CommandContext, envToken, requestedApiUrl, writeLine } from '../context.js';
import { serverClockOf } from '../session/session-context.js';
import { authRequired, CliError } from '../errors.js';
import { describeExpiry } from '../format.js';
import { refreshSession } from '../session/refresh.js';
import { withSessionLock } from '../session/session-lock.js';
import { serviceAccountOf, type ServiceAccountOfSession } from '../session/kept-secrets.js';
import { sessionExpired } from './auth-guard.js';
import type { Command } from './command.js';
import { actFor, describeOrganization, lostWarning, ORG_FLAG_USAGE, orgFlag, reportedOrganization, requestedOrg } from './organization-choice.js';
import { askServer, person, printJson, readReportedSession, serviceAccountWords, SESSION_REPORT_USAGE, sessionReportFlags, verifySession } from './session-report.js';

export const whoamiCommand: Command = {
  name: 'auth:whoami',
  description: 'Show who you are logged in as',
  usage: `${SESSION_REPORT_USAGE('auth:whoami', 'Check the session with the server (GET /api/cli/auth/me) and update it', [ORG_FLAG_USAGE('Show this organization (asked of the server)')])}
  It also names the organization your commands act for (\`prospect org:switch\`); with
  --verify, as the server says it now, and --json lists all of yours as \`organizations\`.

  An access token about to expire (within a quarter of its lifetime, at most a minute) is
  first renewed with the session's refresh token, as every command does. With PROSPECT_TOKEN
  set, it says who that token is, which only the server knows: it always asks.
`,
  flags: { ...sessionReportFlags, ...orgFlag },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    requestedOrg(ctx);
    const fromEnv = envToken(ctx);
    if (fromEnv) return whoamiFromEnv(ctx, fromEnv);
    let session = await readReportedSession(ctx);
    const serviceAccount = serviceAccountOf(session);
    if (serviceAccount) return whoamiServiceAccount(ctx, session, serviceAccount);
    let verified = false;
    let refreshed = false;
    let organizations: Organization[] | undefined;
    ({ session, refreshed } = await refreshSession(ctx, session));
    actFor(ctx, session.apiBaseUrl, session);

    if (ctx.flags.verify) {
      const { session: checked, said, renewed } = await verifySession(ctx, session);
      session = checked;
      refreshed ||= renewed;
      if (!said.valid) {
        // Still refused after a renewal the server granted: its refresh token lives, and so does the session.
        if (session.refreshToken) throw sessionTokenRejected(said.error, session.apiBaseUrl, { env: ctx.env });
        // No refresh token, and the server says the token is dead: so is the local session.
        const removed = await withSessionLock(ctx.store, async () => {
          const current = await ctx.store.read();
          // Another process logged in meanwhile: that session is not the one refused.
          if (current.kind === 'session' && current.session.accessToken !== session.accessToken) return false;
          return ctx.store.remove();
        });
        throw sessionTokenRejected(said.error, session.apiBaseUrl, { done: removed ? 'removed the local session' : undefined, env: ctx.env });
      }
      // A session file holds a person's sign-in; a service account's token there is not one (issue #45: its sessions are a later change).
      if (said.serviceAccount) throw new CliError(`This session's token is a service account's: ${serviceAccountWords(said.user, said.serviceAccount)}. Use it through ${ENV.token}.`);
      session = { ...session, user: said.user, expiresAt: said.expiresAt };
      organizations = said.organizations;
      const verifiedSession = session;
      await withSessionLock(ctx.store, async () => {
        const current = await ctx.store.read();
        // Renewed or replaced by another process meanwhile: what it wrote is newer than what was verified.
        if (current.kind === 'session' && current.session.accessToken === verifiedSession.accessToken) await ctx.store.write(verifiedSession);
      });
      verified = true;
    }

    const serverNow = await serverClockOf(ctx).now(session.apiBaseUrl);
    const expired = Date.parse(session.expiresAt) <= serverNow;
    // An expired session asks the server nothing more: it shows the organization it keeps.
    ctx.session = session;
    ctx.credentials = { accessToken: session.accessToken, apiBaseUrl: session.apiBaseUrl, source: 'file' };
    const { organization, lost } = expired ? { organization: session.organization ?? null, lost: undefined } : await reportedOrganization(ctx, session, organizations);
    if (ctx.flags.json) {
      printJson(ctx, {
        user: session.user,
        apiBaseUrl: session.apiBaseUrl,
        expiresAt: session.expiresAt,
        expired,
        verified,
        refreshed,
        refreshable: Boolean(session.refreshToken),
        organization,
        ...(organizations ? { organizations } : {}),
      });
    } else if (!expired) {
      writeLine(ctx.stdout, `Logged in to ${session.apiBaseUrl} as ${person(session.user)}${verified ? ' (verified)' : ''}`);
      if (organization) writeLine(ctx.stdout, `Acting for ${describeOrganization(organization)}`);
      if (refreshed) writeLine(ctx.stdout, 'Refreshed the session: a new access token and refresh token are saved.');
      writeLine(
        ctx.stdout,
        session.refreshToken
          ? `Access token ${describeExpiry(session.expiresAt, serverNow)}; renewed automatically`
          : `Session ${describeExpiry(session.expiresAt, serverNow)}`,
      );
    }
    if (lost) writeLine(ctx.stderr, lostWarning(lost));
    // An expired session never reads as logged in.
    if (expired) throw authRequired(`Your session for ${session.apiBaseUrl} (${session.user.email}) expired at ${session.expiresAt} — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
  },
};

/**
 * PROSPECT_TOKEN beats the session file here too, as in every command: the token's person is
 * the server's to say (GET /me), so it is asked every time, and a refusal says what to do about
 * the variable, since logging in would not change what the commands use.
 */
async function whoamiFromEnv(ctx: CommandContext, token: string): Promise<void> {
  const server = normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL);
  actFor(ctx, server, undefined);
  const said = await askServer(ctx, server, token);
  if (!said.valid) throw sessionTokenRejected(said.error, server, { env: ctx.env, fromEnv: true });
  const serverNow = await serverClockOf(ctx).now(server);
  if (said.serviceAccount) {
    // A machine's token (issue #45): no address and no member's organizations; its one organization is the server's word.
    if (ctx.flags.json) {
      const { id, name } = said.user;
      printJson(ctx, { user: { id, email: null, name }, kind: 'service_account', organization: said.serviceAccount.organization, apiBaseUrl: server, expiresAt: said.expiresAt, expired: false, verified: true, tokenSource: ENV.token });
      return;
    }
    writeLine(ctx.stdout, `${serviceAccountWords(said.user, said.serviceAccount)}, on ${server} (verified), with the token in ${ENV.token}`);
    writeLine(ctx.stdout, `Token ${describeExpiry(said.expiresAt, serverNow)}`);
    return;
  }
  ctx.credentials = { accessToken: token, apiBaseUrl: server, source: 'env' };
  const { organization } = await reportedOrganization(ctx, undefined, said.organizations);
  if (ctx.flags.json) {
    printJson(ctx, {
      user: said.user,
      apiBaseUrl: server,
      expiresAt: said.expiresAt,
      expired: false,
      verified: true,
      refreshed: false,
      refreshable: false,
      tokenSource: ENV.token,
      organization,
      ...(said.organizations ? { organizations: said.organizations } : {}),
    });
    return;
  }
  writeLine(ctx.stdout, `Logged in to ${server} as ${person(said.user)} (verified), with the token in ${ENV.token}`);
  if (organization) writeLine(ctx.stdout, `Acting for ${describeOrganization(organization)}`);
  writeLine(ctx.stdout, `Token ${describeExpiry(said.expiresAt, serverNow)}`);
}

/**
 * The session of a service account (a CI token exchanged, issue #45): no refresh, so an expired
 * one says to run the exchange again; --verify asks the server, and a token it refuses is
 * removed here, as a pasted token's session is.
 */
async function whoamiServiceAccount(ctx: CommandContext, session: SessionFile, serviceAccount: ServiceAccountOfSession): Promise<void> {
  let organization = serviceAccount.organization;
  let user = session.user;
  const serverNow = await serverClockOf(ctx).now(session.apiBaseUrl);
  const expired = Date.parse(session.expiresAt) <= serverNow;
  let verified = false;
  if (ctx.flags.verify && !expired) {
    const said = await askServer(ctx, session.apiBaseUrl, session.accessToken);
    if (!said.valid) {
      const removed = await withSessionLock(ctx.store, async () => {
        const current = await ctx.store.read();
        if (current.kind === 'session' && current.session.accessToken !== session.accessToken) return false;
        return ctx.store.remove();
      });
      throw sessionTokenRejected(said.error, session.apiBaseUrl, { done: removed ? 'removed the local session' : undefined, env: ctx.env, serviceAccount: serviceAccount.clientId });
    }
    if (said.serviceAccount) organization = said.serviceAccount.organization;
    user = said.user;
    verified = true;
  }
  if (ctx.flags.json) {
    printJson(ctx, { user: { id: user.id, email: null, name: user.name }, kind: 'service_account', clientId: serviceAccount.clientId, organization: organization ?? null, apiBaseUrl: session.apiBaseUrl, expiresAt: session.expiresAt, expired, verified, refreshable: false });
  } else if (!expired) {
    const who = organization ? serviceAccountWords(user, { organization }) : `Service account ${serviceAccount.clientId}`;
    writeLine(ctx.stdout, `${who}, on ${session.apiBaseUrl}${verified ? ' (verified)' : ''}`);
    writeLine(ctx.stdout, `Token ${describeExpiry(session.expiresAt, serverNow)}; not renewed: run the exchange again then`);
  }
  if (expired) throw sessionExpired(session, ctx);
}
