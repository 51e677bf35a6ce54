import { SetMetadata } from '@nestjs/common';

export const ALLOWS_WEB_SESSION = 'prospect:allowsWebSession';

/**
 * Besides a bearer token, this route accepts the signed-in browser's session
 * cookie, but only together with that session's CSRF token in `x-csrf-token`
 * (so a page of another site cannot use it), and never when a bearer token is
 * present (the token decides then).
 */
export const AllowWebSession = () => SetMetadata(ALLOWS_WEB_SESSION, true);
