import { createHmac, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { open, seal } from '../common/sealed.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';

/** The server's key that seals every endpoint's signing secret (server_secrets). */
const SEALING_KEY = 'webhook-signing-secrets';
const PURPOSE = 'webhook-signing-secret';
/** The prefix Standard Webhooks libraries strip before base64-decoding the key. */
export const SECRET_PREFIX = 'whsec_';

/**
 * Endpoint signing secrets: made here (`whsec_` and the base64 of 32 random bytes, the Standard
 * Webhooks form), sealed to their endpoint's id (the signature needs the secret itself, so a hash
 * would not do), and the Standard Webhooks signature: HMAC-SHA256 over `id.timestamp.body` with
 * the decoded key, base64, as `v1,<signature>`.
 */
@Injectable()
export class WebhookSecrets {
  constructor(private readonly secrets: ServerSecrets) {}

  make(): string {
    return SECRET_PREFIX + randomBytes(32).toString('base64');
  }

  async seal(webhookId: string, secret: string): Promise<Buffer> {
    return seal(await this.secrets.get(SEALING_KEY), webhookId, PURPOSE, secret);
  }

  async open(webhookId: string, sealed: Buffer): Promise<string> {
    const secret = open<string>(await this.secrets.get(SEALING_KEY), webhookId, PURPOSE, sealed);
    if (!secret) throw new Error(`the signing secret of webhook ${webhookId} does not open (server_secrets changed?)`);
    return secret;
  }
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` with the key `secret` carries (after `whsec_`). */
export function signature(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}
