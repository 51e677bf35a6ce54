import { Global, Module } from '@nestjs/common';
import { ServerSecrets } from './server-secrets.js';
import { ServerSecretsRepository } from './server-secrets.repository.js';
import { SigningKeys } from './signing-keys.js';

/** Secrets the server keeps for itself in Postgres, shared by every replica: keys, and the ID tokens' signing keys. */
@Global()
@Module({
  providers: [ServerSecrets, ServerSecretsRepository, SigningKeys],
  exports: [ServerSecrets, SigningKeys],
})
export class ServerSecretsModule {}
