import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ServerSecretsRepository } from './server-secrets.repository.js';

/**
 * Keys the server makes for itself (the session cookie's, the device cookie's): made by the
 * first instance that needs one and kept in `server_secrets`, so every replica uses the same
 * key without configuration, and a restart keeps what was signed or sealed with it valid.
 */
@Injectable()
export class ServerSecrets {
  constructor(private readonly secrets: ServerSecretsRepository) {}

  /** The secret called `name`, made now if no instance made it before (one statement, so two racing instances agree). */
  get(name: string): Promise<string> {
    return this.secrets.getOrCreate(name, randomBytes(32).toString('base64url'));
  }
}
