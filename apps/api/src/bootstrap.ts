import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import cookieParser from 'cookie-parser';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { ErrorBodyFilter } from './common/error-body.filter.js';
import { PinoNestLogger, requestLogger } from './logging/logger.js';

/** Requests carry small JSON documents; anything bigger is a mistake or an attack. */
export const BODY_LIMIT = '16kb';

/**
 * Builds the HTTP application exactly as production runs it. `main.ts` and the
 * end-to-end tests both call this, so the tests exercise the real wiring.
 */
export async function createApp(options: AppModuleOptions, logger: Logger): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(options), {
    bodyParser: false,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  app.set('trust proxy', 'loopback');
  app.disable('x-powered-by');
  // JSON answers are small and uncached; hashing each one for an ETag is wasted work.
  app.set('etag', false);
  app.use(requestLogger(logger));
  app.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          'frame-ancestors': ["'none'"],
          'form-action': ["'self'"],
          // On plain http (localhost, a LAN address) upgrading would break every form post.
          'upgrade-insecure-requests': options.config.secureCookies ? [] : null,
        },
      },
      strictTransportSecurity: options.config.secureCookies,
    }),
  );
  app.use(cookieParser());
  app.useBodyParser('json', { limit: BODY_LIMIT });
  app.useBodyParser('urlencoded', { limit: BODY_LIMIT, extended: false });
  app.useGlobalFilters(new ErrorBodyFilter());

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Prospect identity API')
      .setDescription('Device login, token verification and CLI-token issuance for the prospect CLI.')
      .setVersion('1.0')
      .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'A CLI access token (prs_…)' })
      .build(),
  );
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json' });
  return app;
}
