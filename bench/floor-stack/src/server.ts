// The stack floor: the least a Nest-on-Express app with the API's passport bearer
// guard can do to serve the three benchmarked endpoints. NestJS on
// @nestjs/platform-express, a global guard extending @nestjs/passport's
// AuthGuard('bearer') over passport-http-bearer, Express's JSON body parser
// (16 KiB), one exception filter for the error body; no cache, no logging, no
// other middleware, no ORM, no validation library. Per request it runs exactly
// the SQL of bench/floor/server.mjs, through the same module (bench/floor/
// core.mjs), and answers the same status codes, headers and JSON bodies. What it
// costs above the node:http floor is what Nest, Express and passport cost.
//
// bench/run.mjs compiles this file with swc (legacy decorators + metadata) to
// ../dist/server.mjs before it starts the servers. Written for bench/run.mjs; not
// a product.
//
// Env: as bench/floor/server.mjs (PORT defaults to 3101 here).
import 'reflect-metadata';
import {
  type ArgumentsHost,
  Body,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Get,
  HttpCode,
  HttpException,
  Inject,
  Injectable,
  Module,
  Post,
  Req,
  SetMetadata,
} from '@nestjs/common';
import { APP_GUARD, NestFactory, Reflector } from '@nestjs/core';
import { AuthGuard, PassportStrategy } from '@nestjs/passport';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import { Strategy } from 'passport-http-bearer';
import { AUTHENTICATION_REQUIRED, BODY_LIMIT, REALM, createFloor, failure, meBody } from '../../floor/core.mjs';

type Answer = { status: number; body: unknown; headers?: Record<string, string> };
type Floor = ReturnType<typeof createFloor>;

const floor: Floor = createFloor('stack floor', 3101);
const FLOOR = Symbol('floor');

// ── errors: every non-2xx answer is the floor's error body ─────────────────────
/** An answer other than 200, thrown from a guard or a handler to the filter. */
class Refusal extends HttpException {
  constructor(readonly answer: Answer) {
    super(answer.body as object, answer.status);
  }
}
const ok = (a: Answer) => {
  if (a.status !== 200) throw new Refusal(a);
  return a.body;
};

@Catch()
class ErrorBodyFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const { status, body, headers } = toAnswer(exception);
    if (res.headersSent) return;
    if (headers) res.set(headers);
    res.status(status).json(body);
  }
}

function toAnswer(exception: unknown): Answer {
  if (exception instanceof Refusal) return exception.answer;
  if (exception instanceof HttpException) {
    // Nest's own: no route matched, or Express's body parser refused the body (400, 413).
    const status = exception.getStatus();
    if (status === 404) return failure(404, 'not_found', 'No such route.');
    if (status < 500) return failure(status, 'invalid_request', 'The request body could not be read.');
  }
  floor.warn(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
  return failure(500, 'internal', 'Something went wrong on our side. Please try again.');
}

// ── authentication: passport-http-bearer behind a global AuthGuard('bearer') ───
const IS_PUBLIC = 'floor:isPublic';
/** Opens a route to callers without a bearer token. */
const Public = () => SetMetadata(IS_PUBLIC, true);

type TokenRow = Awaited<ReturnType<Floor['verifyToken']>>['row'];

@Injectable()
class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(@Inject(FLOOR) private readonly floor: Floor) {
    super({ realm: REALM });
  }

  /** The row of a valid token (passport's `user`), or false with the reason for the challenge. */
  async validate(token: string): Promise<TokenRow | [false, string]> {
    const { row, reason } = await this.floor.verifyToken(token);
    return row ?? [false, `token ${reason}`];
  }
}

const AUTHENTICATE_OPTIONS = { session: false };

@Injectable()
class BearerGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override canActivate(context: ExecutionContext) {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    return super.canActivate(context);
  }

  override getAuthenticateOptions() {
    return AUTHENTICATE_OPTIONS;
  }

  /** passport's refusals as the floor's 401s, with passport's own WWW-Authenticate challenge. */
  override handleRequest<T>(err: unknown, user: T, info: unknown, _context: ExecutionContext, status?: number): T {
    if (err) throw err;
    if (user) return user;
    if (status === 400) {
      // passport-http-bearer's answer to an Authorization header that is not two words; the API says the same.
      throw new Refusal(
        failure(400, 'invalid_request', 'The Authorization header must be `Bearer <token>`.', {
          'www-authenticate': `Bearer realm="${REALM}", error="invalid_request"`,
        }),
      );
    }
    const challenge = typeof info === 'string' ? info : `Bearer realm="${REALM}"`;
    const description = /error_description="([^"]*)"/.exec(challenge)?.[1];
    throw new Refusal(
      description
        ? failure(401, 'invalid_token', description, { 'www-authenticate': challenge })
        : failure(401, 'unauthorized', AUTHENTICATION_REQUIRED, { 'www-authenticate': challenge }),
    );
  }
}

// ── routes ─────────────────────────────────────────────────────────────────────
/** Express leaves req.body undefined for a request without a body; the node:http floor reads that as {}. */
const orEmpty = (body: unknown) => (body === undefined ? {} : body);

@Controller('api/cli/auth')
class TokensController {
  constructor(@Inject(FLOOR) private readonly floor: Floor) {}

  @Get('me')
  async me(@Req() req: Request & { user: NonNullable<TokenRow> }) {
    return meBody(req.user, await this.floor.organizationsOf(req.user));
  }
}

@Controller('api/cli/auth/device')
@Public()
class DeviceLoginController {
  constructor(@Inject(FLOOR) private readonly floor: Floor) {}

  @Post('start')
  @HttpCode(200)
  async start(@Body() body: unknown, @Req() req: Request) {
    return ok(await this.floor.start(orEmpty(body), req.socket.remoteAddress ?? null));
  }

  @Post('poll')
  @HttpCode(200)
  async poll(@Body() body: unknown) {
    return ok(await this.floor.poll(orEmpty(body)));
  }
}

@Controller()
class HealthController {
  @Public()
  @Get('healthz')
  health() {
    return { status: 'ok' };
  }
}

@Module({
  controllers: [TokensController, DeviceLoginController, HealthController],
  providers: [{ provide: FLOOR, useValue: floor }, BearerStrategy, { provide: APP_GUARD, useClass: BearerGuard }],
})
class StackFloorModule {}

// ── bootstrap ──────────────────────────────────────────────────────────────────
async function main() {
  const { port, host } = floor.config;
  const app = await NestFactory.create<NestExpressApplication>(StackFloorModule, new ExpressAdapter(), {
    logger: false,
    abortOnError: false,
    bodyParser: false, // Nest's default registers a JSON and a urlencoded parser; only the JSON one, below
  });
  // The node:http floor sends neither header; Express would hash every body for its ETag.
  app.disable('x-powered-by');
  app.set('etag', false);
  // The node:http floor reads any body as JSON, whatever its Content-Type and top-level value; so does this.
  app.useBodyParser('json', { limit: BODY_LIMIT, strict: false, type: () => true });
  app.useGlobalFilters(new ErrorBodyFilter());
  await app.listen(port, host);
  app.getHttpServer().keepAliveTimeout = 5_000;
  process.stdout.write(`stack floor listening on http://${host}:${port}\n`);

  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      if (stopping) return;
      stopping = true;
      setTimeout(() => process.exit(1), 5_000).unref();
      const closed = app.close();
      app.getHttpServer().closeAllConnections?.();
      closed.then(() => floor.end()).finally(() => process.exit(0));
    });
  }
}

main().catch((err) => {
  floor.warn(`failed to start: ${err?.stack ?? err}`);
  process.exit(1);
});
