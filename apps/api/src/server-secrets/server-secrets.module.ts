import { Global, Module } from '@nestjs/common';
import { ServerSecrets } from './server-secrets.js';
import { ServerSecretsRepository } from './server-secrets.repository.js';

/** Secrets the server keeps for itself in Postgres, shared by every replica. */
@Global()
@Module({
  providers: [ServerSecrets, ServerSecretsRepository],
  exports: [ServerSecrets, ServerSecretsRepository],
})
export class ServerSecretsModule {}
