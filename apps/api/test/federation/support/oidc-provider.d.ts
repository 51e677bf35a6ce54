/**
 * The part of node-oidc-provider 9 (which ships no types) that the test provider uses. A test
 * dependency only; the API itself is a relying party (openid-client), never this.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface InteractionDetails {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }

  interface Grant {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }

  interface Account {
    accountId: string;
    claims(): { sub: string } | Promise<{ sub: string }>;
  }

  interface ProviderConfiguration {
    findAccount(ctx: unknown, sub: string): Account | undefined | Promise<Account | undefined>;
    interactions: { url(ctx: unknown, interaction: { uid: string }): string };
    renderError(ctx: { type: string; body: string }, out: { error: string; error_description?: string }, error: unknown): void;
    [setting: string]: unknown;
  }

  export default class Provider {
    constructor(issuer: string, configuration: ProviderConfiguration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
    Grant: { new (properties: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
  }
}
