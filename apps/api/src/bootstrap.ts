import 'reflect-metadata';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CODES } from '@prospect/contract';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { AppModule, type AppModuleOptions } from './app.module.js';
import { installPassportRequestMethods } from './auth/passport-request.js';
import { ApiException } from './common/api-exception.js';
import { API_PREFIX, hasBody, SCIM_MEDIA_TYPE } from './common/http-body.js';
import { BODY_LIMIT } from './common/body-limit.js';
import { ErrorBodyFilter } from './common/error-body.filter.js';
import { refuseMalformedQueries, refuseUnreadableBodies } from './common/well-formed-text.js';
import { AppConfig } from './config/app-config.js';
import { DatabaseAvailability } from './database/database-availability.js';
import { HttpDrain } from './http-drain.js';
import { PinoNestLogger, requestLogger } from './logging/logger.js';
import { Metrics } from './metrics/metrics.js';
import { requestMetrics } from './metrics/request-metrics.js';
import { OAuthCors } from './oauth/oauth-cors.js';
import { samlBodies } from './federation/saml/saml-bodies.js';
import { PageChain } from './web/page-chain.js';
import { configureViews } from './web/views.js';

const STATIC_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'public');
const WEBAUTHN_BROWSER_BUNDLE = join(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle');

/**
 * Builds the HTTP application exactly as production runs it. `main.ts` and the
 * end-to-end tests both call this, so the tests exercise the real wiring.
 */
export async function createApp(options: AppModuleOptions, logger: Logger): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(options), {
    // Body parsers are mounted below, each only where its kind of body is read.
    bodyParser: false,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  const config = app.get(AppConfig);
  new HttpDrain(app.getHttpServer(), config.httpRequestTimeoutSeconds);

  installPassportRequestMethods(app.getHttpAdapter().getInstance().request);
  app.disable('x-powered-by');
  // JSON answers are small and never cached; hashing each one for an ETag is wasted work.
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  const metrics = app.get(Metrics);
  // The middleware every request goes through, in this order, as one router layer rather than
  // seven (issue #35): Express's router allocates a match, a params object and a closure for every
  // layer it passes a request through, about half a KiB each.
  app.use(
    oneLayer(
      requestLogger(logger, requestMetrics(metrics)),
      // OWASP's REST set on every answer: no sniffing, no framing, HSTS on https. Pages add the
      // document set (web/page-headers.ts, helmet's); helmet's full set on every JSON answer cost
      // /me a tenth of its throughput and protects nothing a browser renders.
      apiHeaders(config.secureCookies),
      // A NUL or bytes that are not UTF-8 in a query string: a 400 before any route, page or parser.
      refuseMalformedQueries,
      // CORS on the OAuth endpoints a browser client calls (token, revocation, userinfo, JWKS,
      // discovery), for the origins registered clients allow; nowhere else (oauth/oauth-cors.ts).
      app.get(OAuthCors).middleware,
      // JSON bodies for the API; the pages read forms (web.module.ts). Not mounted on a path:
      // a mounted middleware makes Express rewrite req.url for every request under it. So every
      // path parses JSON, and every parsed body is checked at once (depth, text), known route or not.
      // SAML's metadata and responses, on their three routes only (federation/saml/saml-bodies.ts).
      samlBodies,
      // SCIM clients send `application/scim+json` (RFC 7644 §3.1): the same JSON, read the same way.
      express.json({ limit: BODY_LIMIT, type: ['application/json', SCIM_MEDIA_TYPE] }),
      refuseNonJsonBodies,
      refuseUnreadableBodies,
    ),
  );
  app.useStaticAssets(STATIC_ROOT, { prefix: '/assets/', maxAge: '1h', index: false, fallthrough: true });
  // The passkey pages' WebAuthn helper, served from its package as built (its UMD bundle).
  app.useStaticAssets(WEBAUTHN_BROWSER_BUNDLE, { prefix: '/assets/vendor/simplewebauthn/', maxAge: '1h', index: false, fallthrough: true });
  // The pages' chain (document headers, forms, web session), run for page paths only (web/page-chain.ts).
  app.use(app.get(PageChain).middleware);
  configureViews(app);
  app.useGlobalFilters(new ErrorBodyFilter(app.get(DatabaseAvailability)));

  // Built at the first request for it, not at every start: scanning every route for it took about a
  // third of a second of CPU per process (and per test app).
  const document = () =>
    SwaggerModule.createDocument(
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

/**
 * The API reads JSON only: a body of another type is a 415 rather than silently
 * read as no body (which would answer "Missing field" for a body that was sent).
 * No body at all (`curl -X POST`, Content-Length: 0) is fine whatever its type says. A body the
 * JSON parser just read (`req.body` set) was JSON by its type: not asked again.
 */
function refuseNonJsonBodies(req: Request, _res: Response, next: NextFunction): void {
  if (req.body === undefined && hasBody(req) && req.url.startsWith(API_PREFIX) && !req.is('application/json')) {
    next(new ApiException(415, ERROR_CODES.unsupportedMediaType, 'Unsupported Content-Type: send application/json.'));
  } else {
    next();
  }
}

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * Middleware run one after another inside a single router layer, as the router would run them as
 * layers of their own: each calls `next()` to go on or `next(error)` to hand an error to the
 * error handlers (the rest of the chain is skipped, as the router skips non-error layers); one
 * that throws hands over its error the same way. One `next` per request, whatever the length.
 */
function oneLayer(...chain: Middleware[]): Middleware {
  return (req, res, out) => {
    let i = 0;
    const next: NextFunction = (err?: unknown) => {
      if (err) return out(err);
      const step = chain[i++];
      if (!step) return out();
      try {
        step(req, res, next);
      } catch (thrown) {
        out(thrown);
      }
    };
    next();
  };
}

/**
 * The headers every answer carries, set as constants: helmet would rebuild the same
 * Content-Security-Policy string and walk its middleware chain on every request (issue #35).
 * test/common/security-headers.e2e-spec.ts checks them on the wire, on http and on https.
 */
function apiHeaders(secure: boolean) {
  const headers: [string, string][] = [
    ['Content-Security-Policy', "frame-ancestors 'none'"],
    ['X-Content-Type-Options', 'nosniff'],
    ...(secure ? [['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'] as [string, string]] : []),
  ];
  return (_req: Request, res: Response, next: NextFunction): void => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
