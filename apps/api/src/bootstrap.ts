import 'reflect-metadata';
import fastifyCookie from '@fastify/cookie';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { RawServerDefault } from 'fastify';
import type { Logger } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { ErrorBodyFilter } from './common/error-body.filter.js';
import { logRequests, PinoNestLogger } from './logging/logger.js';

/** Requests carry small JSON documents; anything bigger is a mistake or an attack. */
const BODY_LIMIT_BYTES = 16 * 1024;

export interface CreateAppOptions extends AppModuleOptions {
  /**
   * Serve the Swagger UI page at /api/docs (the JSON document is always served).
   * Only the in-process test harness turns it off: jest 29's module loader cannot
   * load @fastify/static's ES-module dependency. The process tests check the UI.
   */
  docsUi?: boolean;
}

/**
 * Builds the HTTP application exactly as production runs it. `main.ts` and the
 * end-to-end tests both call this, so the tests exercise the real wiring.
 *
 * Fastify rather than Express: a CLI round trip is a few microseconds of our
 * own work, and on Express the framework's routing took most of each request
 * (README.md, Performance).
 */
export async function createApp(options: CreateAppOptions, logger: Logger): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // A reverse proxy on the same machine (e.g. a TLS terminator) passes the client's address on.
    trustProxy: 'loopback',
  });
  logRequests(adapter.getInstance(), logger);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options), adapter, {
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  // On every answer, JSON included, OWASP's REST API set: no sniffing, no framing, HSTS on
  // https. Pages add what documents need (web/html.ts); helmet's full set on every JSON
  // answer cost /me a tenth of its throughput and protects nothing a browser renders.
  app.useSecurityHeaders({
    contentSecurityPolicy: { useDefaults: false, directives: { 'default-src': null, 'frame-ancestors': ["'none'"] } },
    crossOriginOpenerPolicy: false,
    crossOriginResourcePolicy: false,
    referrerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xFrameOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    strictTransportSecurity: options.config.secureCookies,
  });
  // An empty body with a JSON content type (`curl -X POST -H 'content-type: application/json'`)
  // means no body, rather than a 400 that would hide a 401 or a clearer 400 about the fields.
  const parseJson = adapter.getInstance().getDefaultJsonParser('error', 'error');
  app.useBodyParser<RawServerDefault>('application/json', { bodyLimit: BODY_LIMIT_BYTES }, (req, body, done) =>
    body.length === 0 ? done(null, undefined) : parseJson(req, body.toString('utf8'), done),
  );
  await app.register(fastifyCookie);
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
  SwaggerModule.setup('api/docs', app, document, { jsonDocumentUrl: 'api/docs-json', ui: options.docsUi ?? true });
  return app;
}
