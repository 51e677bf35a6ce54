import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { SignInBlocksController } from './sign-in-blocks.controller.js';
import { SignInBlocksService } from './sign-in-blocks.service.js';

/** What administrators do through the JSON API (bearer token of an admin). */
@Module({
  imports: [UsersModule],
  controllers: [SignInBlocksController],
  providers: [SignInBlocksService],
})
export class AdminModule {}
