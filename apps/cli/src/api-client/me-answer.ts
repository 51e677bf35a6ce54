import { type Organization, OrganizationSchema, type User, UserSchema } from '@prospect/contract';
// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { CliError } from '../errors.js';
import { stripControls } from './untrusted-text.js';

// Built on first use, not at startup: `whoami` without --verify never needs it.
let meVariants: ReturnType<typeof buildMeVariants> | undefined;
function buildMeVariants() {
  const isoTimestamp = z.iso.datetime({ offset: true });
  const TopLevelMe = z.object({ user: UserSchema, expiresAt: isoTimestamp });
  // A service account's token (issue #45): no address, and its organization beside `user`.
  const ServiceAccountMe = z.pipe(
    z.object({
      user: z.object({ id: z.string().check(z.minLength(1)), email: z.null(), name: z.string() }),
      kind: z.literal('service_account'),
      organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
      expiresAt: isoTimestamp,
    }),
    z.transform(({ user, organization, expiresAt }) => ({ user: { id: user.id, email: '', name: user.name }, expiresAt, serviceAccount: { organization } })),
  );
  return z.union([
    ServiceAccountMe,
    TopLevelMe,
    z.pipe(z.object({ data: TopLevelMe }), z.transform((v) => v.data)),
    z.pipe(z.extend(UserSchema, { expiresAt: isoTimestamp }), z.transform(({ id, email, name, expiresAt }) => ({ user: { id, email, name }, expiresAt }))),
  ]);
}

let organizationList: z.ZodMiniArray<typeof OrganizationSchema> | undefined;

/** What GET /api/cli/auth/me says of a token. */
export interface MeAnswer {
  user: User;
  expiresAt: string;
  scopes?: string[];
  /** Which token or session made this one, in the server's words ("the token “CI runner”"). */
  madeWith?: string;
  /** For a token with the `orgs` scope: the person's organizations with their role, as the server read them now. */
  organizations?: Organization[];
  /**
   * Set when the token is a service account's (issue #45): a machine of this organization, not a
   * person; its `user.email` is empty (it has no address) and it has no session of its own.
   */
  serviceAccount?: { organization: { id: string; slug: string; name: string } };
}

/** The most of `madeWith` that is shown: it names a token or a session, a line at most. */
const MAX_MADE_WITH_LENGTH = 200;

/**
 * Top-level `user`, a flat user, or `{data: {user}}`: all become `{user, expiresAt}`, with
 * `madeWith` when the server sent one as text. A `madeWith` of another type is left out rather
 * than failing the answer: it is only ever shown, and a server from before it sends none.
 */
export function normalizeMeResponse(body: unknown): Omit<MeAnswer, 'scopes'> {
  const parsed = (meVariants ??= buildMeVariants()).safeParse(body);
  if (!parsed.success) throw new CliError('The server answered /api/cli/auth/me with an unexpected shape.', 1, 'Is --api-url pointing at a Prospect server?');
  const { user, expiresAt } = parsed.data;
  const serviceAccount = 'serviceAccount' in parsed.data ? parsed.data.serviceAccount : undefined;
  const fields = (body as { data?: unknown }).data ?? body;
  const madeWith = (fields as { madeWith?: unknown }).madeWith;
  // Stripped here too, not only with the rest of the body: this text goes straight to the terminal.
  const shown = typeof madeWith === 'string' ? stripControls(madeWith.replace(/\s+/g, ' ')).replace(/ {2,}/g, ' ').trim().slice(0, MAX_MADE_WITH_LENGTH) : '';
  // Absent (a token without `orgs`, a server from before organizations) or malformed: not known, never a failure of the answer.
  const organizations = (organizationList ??= z.array(OrganizationSchema)).safeParse((fields as { organizations?: unknown }).organizations);
  return {
    user: { id: user.id, email: user.email, name: user.name },
    expiresAt,
    ...(shown ? { madeWith: shown } : {}),
    ...(serviceAccount
      ? { serviceAccount: { organization: { id: serviceAccount.organization.id, slug: stripControls(serviceAccount.organization.slug), name: stripControls(serviceAccount.organization.name) } } }
      : {}),
    ...(organizations.success ? { organizations: organizations.data.map(({ id, slug, name, role }) => ({ id, slug, name, role })) } : {}),
  };
}
