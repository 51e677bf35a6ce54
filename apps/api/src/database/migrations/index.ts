import { CreateUsers1795400000000 } from './1795400000000-create-users.js';
import { CreateDeviceLogins1795400000001 } from './1795400000001-create-device-logins.js';
import { CreateAccessTokens1795400000002 } from './1795400000002-create-access-tokens.js';
import { CreateAuthEvents1795400000003 } from './1795400000003-create-auth-events.js';
import { CreateWebSessions1795400000004 } from './1795400000004-create-web-sessions.js';
import { NotifyTokenChanges1795400000010 } from './1795400000010-notify-token-changes.js';
import { ExpressWebSessions1795400000011 } from './1795400000011-express-web-sessions.js';
import { DeviceLoginSealedReply1795400000012 } from './1795400000012-device-login-sealed-reply.js';
import { RateLimits1795400000013 } from './1795400000013-rate-limits.js';
import { DeviceLoginUserAgent1795400000014 } from './1795400000014-device-login-user-agent.js';
import { DeviceLoginCancelled1795400000015 } from './1795400000015-device-login-cancelled.js';
import { RefreshTokensAndOAuthClients1795400000016 } from './1795400000016-refresh-tokens-and-oauth-clients.js';
import { RefreshTokenSuccessors1795400000017 } from './1795400000017-refresh-token-successors.js';
import { DropCodeFailedIndex1795400000018 } from './1795400000018-drop-code-failed-index.js';
import { Scopes1795400000019 } from './1795400000019-scopes.js';
import { ClientDisabled1795400000020 } from './1795400000020-client-disabled.js';
import { AccountTokens1795400000021 } from './1795400000021-account-tokens.js';
import { AccountStates1795400000022 } from './1795400000022-account-states.js';
import { SecondFactors1795400000023 } from './1795400000023-second-factors.js';
import { Passkeys1795400000024 } from './1795400000024-passkeys.js';
import { QuietPurge1795400000025 } from './1795400000025-quiet-purge.js';
import { CredentialEpochs1795400000026 } from './1795400000026-credential-epochs.js';
import { TokenMinters1795400000027 } from './1795400000027-token-minters.js';
import { MailOutbox1795400000028 } from './1795400000028-mail-outbox.js';
import { AuthorizationCode1795400000029 } from './1795400000029-authorization-code.js';
import { IdentityProviders1795400000030 } from './1795400000030-identity-providers.js';
import { IdempotencyKeys1795400000031 } from './1795400000031-idempotency-keys.js';
import { GrantCredentialEpoch1795400000032 } from './1795400000032-grant-credential-epoch.js';
import { ProviderMfaAcrValues1795400000033 } from './1795400000033-provider-mfa-acr-values.js';
import { ConsentCredentialEpoch1795400000034 } from './1795400000034-consent-credential-epoch.js';
import { GrantProof1795400000035 } from './1795400000035-grant-proof.js';
import { PasskeyChallengeUse1795400000036 } from './1795400000036-passkey-challenge-use.js';
import { CliLoopbackRedirect1795400000037 } from './1795400000037-cli-loopback-redirect.js';
import { Organizations1795400000038 } from './1795400000038-organizations.js';
import { OrganizationJoinRequests1795400000040 } from './1795400000040-organization-join-requests.js';
import { EventStream1795400000041 } from './1795400000041-event-stream.js';
import { ServiceAccounts1795400000042 } from './1795400000042-service-accounts.js';
import { Webhooks1795400000043 } from './1795400000043-webhooks.js';
import { ServiceAccountFederations1795400000044 } from './1795400000044-service-account-federations.js';
import { SamlConnections1795400000045 } from './1795400000045-saml-connections.js';
import { Scim1795400000046 } from './1795400000046-scim.js';
import { Grants1795400000047 } from './1795400000047-grants.js';
import { OrganizationInvitationsEndedIndex1795400000048 } from './1795400000048-organization-invitations-ended-index.js';
import { ScimAccountDisabledAt1795400000049 } from './1795400000049-scim-account-disabled-at.js';
import { ScimCreatedAccounts1795400000050 } from './1795400000050-scim-created-accounts.js';
import { OrganizationDepartures1795400000051 } from './1795400000051-organization-departures.js';
import { TokensExchangedThroughFederation1795400000052 } from './1795400000052-tokens-exchanged-through-federation.js';
import { GrantFederatedLink1795400000053 } from './1795400000053-grant-federated-link.js';
import { AccessTokenIssuedAt1795400000054 } from './1795400000054-access-token-issued-at.js';
import { DevicePollSlots1795400000055 } from './1795400000055-device-poll-slots.js';

/** Every migration, in order. Each is a reviewed SQL change with an exact `down()`. */
export const MIGRATIONS = [
  CreateUsers1795400000000, CreateDeviceLogins1795400000001, CreateAccessTokens1795400000002, CreateAuthEvents1795400000003, CreateWebSessions1795400000004, NotifyTokenChanges1795400000010,
  ExpressWebSessions1795400000011,
  DeviceLoginSealedReply1795400000012,
  RateLimits1795400000013,
  DeviceLoginUserAgent1795400000014,
  DeviceLoginCancelled1795400000015,
  RefreshTokensAndOAuthClients1795400000016,
  RefreshTokenSuccessors1795400000017,
  DropCodeFailedIndex1795400000018,
  Scopes1795400000019,
  ClientDisabled1795400000020,
  AccountTokens1795400000021,
  AccountStates1795400000022,
  SecondFactors1795400000023,
  Passkeys1795400000024,
  QuietPurge1795400000025,
  CredentialEpochs1795400000026,
  TokenMinters1795400000027,
  MailOutbox1795400000028,
  AuthorizationCode1795400000029,
  IdentityProviders1795400000030,
  IdempotencyKeys1795400000031,
  GrantCredentialEpoch1795400000032,
  ProviderMfaAcrValues1795400000033,
  ConsentCredentialEpoch1795400000034,
  GrantProof1795400000035,
  PasskeyChallengeUse1795400000036,
  CliLoopbackRedirect1795400000037,
  Organizations1795400000038,
  OrganizationJoinRequests1795400000040,
  EventStream1795400000041,
  ServiceAccounts1795400000042,
  Webhooks1795400000043,
  ServiceAccountFederations1795400000044,
  SamlConnections1795400000045,
  Scim1795400000046,
  Grants1795400000047,
  OrganizationInvitationsEndedIndex1795400000048,
  ScimAccountDisabledAt1795400000049,
  ScimCreatedAccounts1795400000050,
  OrganizationDepartures1795400000051,
  TokensExchangedThroughFederation1795400000052,
  GrantFederatedLink1795400000053,
  AccessTokenIssuedAt1795400000054,
  DevicePollSlots1795400000055,
];
