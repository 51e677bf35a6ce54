import { SetMetadata } from '@nestjs/common';

export const ALLOWS_SERVICE_ACCOUNT = 'prospect:allowsServiceAccount';

/**
 * A service account's token (issue #45) may call this route. Every other route refuses one with
 * 403 before its handler runs: a machine of an organization is no person, and a route written for
 * people (the site, the tokens it mints, approvals, administration, an organization's management)
 * must not meet one by surprise. A route opts in only after it answers a service account rightly.
 */
export const AllowServiceAccount = () => SetMetadata(ALLOWS_SERVICE_ACCOUNT, true);
