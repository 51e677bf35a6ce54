import type { TestApp } from './test-app.js';

/*
 * SQL: federation/ reads links per account (IdentityProvidersService.linksOf), while a test often
 * knows only the provider's subject, or asks about a provider already deleted; and the services
 * end a link's or a provider's sessions with the change, so the state a request in flight leaves
 * behind (a refusal or a disable its session missed) is written directly.
 */

/** A link between an account and a provider's (issuer, subject), with what the leaver check reads of it. */
export interface FederatedLink {
  id: string;
  userId: string;
  /** Whether a refresh token of the provider's is kept (sealed) for the check. */
  hasRefreshToken: boolean;
  lastVerifiedAt: Date;
  refusedAt: Date | null;
}

/** The links of the provider's `subject`, or every link of `providerId`, or of the account `userId`, oldest first. */
export function federatedLinksOf(api: TestApp, of: { subject: string } | { providerId: string } | { userId: string }): Promise<FederatedLink[]> {
  return api.dataSource.query(
    `SELECT id, user_id AS "userId", refresh_token_sealed IS NOT NULL AS "hasRefreshToken", last_verified_at AS "lastVerifiedAt", refused_at AS "refusedAt"
       FROM federated_identities WHERE subject = $1 OR provider_id = $2 OR user_id = $3 ORDER BY created_at`,
    ['subject' in of ? of.subject : null, 'providerId' in of ? of.providerId : null, 'userId' in of ? of.userId : null],
  );
}

/** Marks the link of `subject` refused and nothing else: its sessions stay, as if one was written back after the refusal ended it. */
export async function markLinkRefusedOnly(api: TestApp, subject: string): Promise<void> {
  await api.dataSource.query(`UPDATE federated_identities SET refused_at = now() WHERE subject = $1`, [subject]);
}

/** Disables (or enables again) the provider and nothing else: its sessions stay, as if one was written back after the disable ended them. */
export async function markProviderDisabledOnly(api: TestApp, id: string, disabled: boolean): Promise<void> {
  await api.dataSource.query(`UPDATE identity_providers SET disabled_at = CASE WHEN $2 THEN now() END WHERE id = $1`, [id, disabled]);
}
