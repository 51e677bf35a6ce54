import { Injectable } from '@nestjs/common';
import type * as oidc from 'openid-client';
import { providerFetch } from '../common/pinned-fetch.js';
import { AppConfig } from '../config/app-config.js';

/**
 * Where Prospect may connect when it talks to an identity provider (issue #43, finding 8): the
 * rules and the pinned fetch are common/pinned-fetch.ts's, shared with the issuers service
 * accounts trust (issue #45).
 */
export { type AddressKind, addressKind } from '../common/outbound-address.js';
export { checkedAddresses, ProviderAddressRefused, type ProviderNetworkRules, providerFetch, refuseOwnUrl, type Resolve } from '../common/pinned-fetch.js';

/** providerFetch under this deployment's settings (FEDERATION_ALLOW_PRIVATE_ISSUERS, PUBLIC_URL). */
@Injectable()
export class ProviderNetwork {
  readonly fetch: oidc.CustomFetch;

  constructor(config: AppConfig) {
    this.fetch = providerFetch({ allowPrivate: () => config.federationAllowPrivateIssuers, ownUrl: () => config.publicUrl });
  }
}
