import { Global, Module } from '@nestjs/common';
import { Mailer } from './mailer.js';

/** Outbound mail, for whichever feature writes to people (password reset, …). */
@Global()
@Module({ providers: [Mailer], exports: [Mailer] })
export class MailModule {}
