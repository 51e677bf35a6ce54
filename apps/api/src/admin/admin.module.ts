import { Module } from '@nestjs/common';
import { OAuthModule } from '../oauth/oauth.module.js';
import { UsersModule } from '../users/users.module.js';
import { OAuthClientsController } from './oauth-clients.controller.js';
import { SignInBlocksController } from './sign-in-blocks.controller.js';
import { SignInBlocksService } from './sign-in-blocks.service.js';

/** What administrators do through the JSON API (bearer token of an admin). */
@Module({
  imports: [UsersModule, OAuthModule],
  controllers: [SignInBlocksController, OAuthClientsController],
  providers: [SignInBlocksService],
})
export class AdminModule {}
