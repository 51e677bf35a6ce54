import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { SERVICE_NAME } from '@prospect/contract';
import { Strategy } from 'passport-http-bearer';
import type { AuthPrincipal } from './auth-principal.js';
import { AccessTokenVerifier, InvalidTokenError } from './access-token-verifier.js';

/**
 * `Authorization: Bearer prs_…`, verified by AccessTokenVerifier (a cache hit on a Postgres
 * server). A refused token throws InvalidTokenError, which the guard turns into the
 * RFC 6750 answer; passport-http-bearer itself answers a missing header (challenge)
 * and a malformed one (400).
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly verifier: AccessTokenVerifier) {
    super({ realm: SERVICE_NAME });
  }

  /** @param token a string from the header; from `access_token` in a query or form it may be anything. */
  validate(token: unknown): Promise<AuthPrincipal> {
    if (typeof token !== 'string') return Promise.reject(new InvalidTokenError('unknown'));
    return this.verifier.verify(token);
  }
}
