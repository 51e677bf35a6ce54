import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { SERVICE_NAME } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import { BackgroundWrites } from '../common/background-writes.js';
import { InvalidTokenError, TokensService } from './tokens.service.js';

/**
 * `Authorization: Bearer prs_…`. A refused token fails with passport's RFC 6750
 * challenge, `error="invalid_token"` and a description saying why.
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(
    private readonly tokens: TokensService,
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
  ) {
    super({ realm: SERVICE_NAME, passReqToCallback: true });
  }

  async validate(req: Request, token: string) {
    try {
      return await this.tokens.verify(token);
    } catch (err) {
      if (!(err instanceof InvalidTokenError)) throw err;
      // Audit without awaiting: a failed verification must stay cheap to answer.
      this.background.run('audit a failed verification', () =>
        this.audit.record('token.verify_failed', { ip: req.ip, detail: { reason: err.reason } }),
      );
      // Nest's mixin calls done(null, false, message); passport-http-bearer turns the
      // message into the error_description of its challenge.
      return [false, err.message] as const;
    }
  }
}
