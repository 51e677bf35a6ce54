import { ServiceAccountsModule } from '../service-accounts/service-accounts.module.js';
import { Injectable, type MiddlewareConsumer, Module, type NestMiddleware, type NestModule, RequestMethod } from '@nestjs/common';
import { ERROR_CODES } from '@prospect/contract';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiException } from '../common/api-exception.js';
import { BODY_LIMIT } from '../common/body-limit.js';
import { hasBody } from '../common/http-body.js';
import { refuseMalformedForms } from '../common/well-formed-text.js';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { RefreshTokensModule } from '../refresh-tokens/refresh-tokens.module.js';
import { GrantsModule } from '../grants/grants.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { UsersModule } from '../users/users.module.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthorizationCodeRedeemer } from './authorization-code-redeemer.js';
import { AuthorizationCodesRepository } from './authorization-codes.repository.js';
import { AuthorizationService } from './authorization.service.js';
import { ClientAuthentication } from './client-authentication.js';
import { ConsentsRepository } from './consents.repository.js';
import { IdTokens } from './id-tokens.js';
import { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { OAuthCors } from './oauth-cors.js';
import { OAuthController } from './oauth.controller.js';
import { OAuthService } from './oauth.service.js';

const FORM = 'application/x-www-form-urlencoded';

/**
 * The OAuth endpoints read form bodies (RFC 6749 §4.1.3, RFC 8628 §3.1): anything else with a
 * body is refused by name rather than read as no parameters at all.
 */
function requireForm(req: Request, _res: Response, next: NextFunction): void {
  next(hasBody(req) && !req.is(FORM) ? new ApiException(400, ERROR_CODES.invalidRequest, `Send the parameters form-encoded (Content-Type: ${FORM}).`) : undefined);
}

/** The form parser for the OAuth endpoints only, as the pages have theirs (web.module.ts). */
@Injectable()
class OAuthFormMiddleware implements NestMiddleware {
  private readonly chain = express
    .Router()
    .use(requireForm, express.urlencoded({ limit: BODY_LIMIT, extended: false, parameterLimit: 20 }), refuseMalformedForms);

  use(req: Request, res: Response, next: NextFunction): void {
    this.chain(req, res, next);
  }
}

/**
 * The OAuth 2.0 authorization server and OpenID provider: clients, the device and code grants,
 * tokens, revocation, introspection, userinfo, discovery; the consent page lives with the pages
 * (web/oauth/consent-page.controller.ts) and uses AuthorizationService.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OAuthClient]), GrantsModule, TokensModule, RefreshTokensModule, DeviceLoginModule, UsersModule, OrganizationsModule, ServiceAccountsModule, WebhooksModule],
  controllers: [OAuthController],
  providers: [
    OAuthService,
    OAuthClientsService,
    OAuthClientsRepository,
    AuthorizationService,
    AuthorizationCodeRedeemer,
    AuthorizationCodesRepository,
    ConsentsRepository,
    ClientAuthentication,
    IdTokens,
    OAuthCors,
  ],
  exports: [OAuthClientsService, AuthorizationService, OAuthCors],
})
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(OAuthFormMiddleware).forRoutes({ path: 'oauth/{*rest}', method: RequestMethod.POST });
  }
}
