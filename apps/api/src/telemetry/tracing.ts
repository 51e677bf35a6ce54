import { createRequire, syncBuiltinESMExports } from 'node:module';
import type { ServerResponse } from 'node:http';
import type * as OtelApi from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import type * as ExporterModule from '@opentelemetry/exporter-trace-otlp-http';
import type * as ExpressModule from '@opentelemetry/instrumentation-express';
import type * as HttpModule from '@opentelemetry/instrumentation-http';
import type * as PgModule from '@opentelemetry/instrumentation-pg';
import type * as ResourcesModule from '@opentelemetry/resources';
import type * as SdkModule from '@opentelemetry/sdk-node';
import type * as SemconvModule from '@opentelemetry/semantic-conventions';

/** Traces start only when an OTLP endpoint is named, as the OpenTelemetry variables define it. */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

export interface Tracing {
  /** The active span's ids for a log line (pino's mixin), or nothing outside a span. */
  logFields(): { trace_id?: string; span_id?: string };
  /** Exports what is buffered and stops; gives up (spans lost, said in the answer) after `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<'flushed' | 'timed out' | 'failed'>;
}

/** The attribute that names the request on its server span, as `reqId` does on its log lines. */
export const REQUEST_ID_ATTRIBUTE = 'prospect.request_id';

/** Probes and scrapes every few seconds would bury the requests worth a trace (the request log skips them too). */
const UNTRACED_PATHS = ['/api/health', '/metrics'];

/**
 * Starts the OpenTelemetry SDK: spans of incoming HTTP requests, of Express's routing and of every
 * SQL statement run for them, exported over OTLP/HTTP (JSON) to the endpoint the standard
 * OTEL_EXPORTER_OTLP_* variables name, in batches (OTEL_BSP_*).
 *
 * Synchronous, with `require`: the instrumentations hook CommonJS `require` (require-in-the-middle),
 * and Express and pg are CommonJS packages, but the API and Nest 12 import them as ESM, which that
 * hook never sees. So they are required here once, after the hook is set: it patches their
 * prototypes in place (Express's Router and application, pg's Client and pg-pool, http's Server),
 * which the ESM imports that follow share. Doing it synchronously keeps it ahead of every module
 * main.ts imports after this one (see telemetry/register.ts).
 */
export function startTracing(env: NodeJS.ProcessEnv): Tracing {
  const require = createRequire(import.meta.url);
  const api = require('@opentelemetry/api') as typeof OtelApi;
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkModule;
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof ExporterModule;
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof HttpModule;
  const { ExpressInstrumentation, ExpressLayerType } = require('@opentelemetry/instrumentation-express') as typeof ExpressModule;
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof PgModule;
  const { defaultResource, resourceFromAttributes } = require('@opentelemetry/resources') as typeof ResourcesModule;
  const { ATTR_SERVICE_VERSION } = require('@opentelemetry/semantic-conventions') as typeof SemconvModule;
  const { version } = require('../../package.json') as { version: string };

  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || 'prospect-api',
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_VERSION]: version })),
    // Its URL, headers, timeout and compression from OTEL_EXPORTER_OTLP_(TRACES_)*; batched by OTEL_BSP_*.
    traceExporter: new OTLPTraceExporter(),
    // Traces only: unset, the SDK would also push metrics and logs over OTLP (metrics are Prometheus's here).
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.some((path) => req.url === path || req.url?.startsWith(`${path}/`) || req.url?.startsWith(`${path}?`)),
        // No request header is recorded (none is unless listed): Authorization and Cookie stay out.
        // The query string's values may be codes and tokens (a sign-in's `code`, a setup code):
        // only its parameter names are kept, as the request log keeps none of it.
        startIncomingSpanHook: (req) => {
          const query = queryNamesOnly(req.url);
          return query === undefined ? {} : { 'url.query': query };
        },
        applyCustomAttributesOnSpan: (span: Span, _req: unknown, res: unknown) => {
          const id = (res as ServerResponse).getHeader?.('x-request-id');
          if (typeof id === 'string') span.setAttribute(REQUEST_ID_ATTRIBUTE, id);
        },
        // Outgoing calls are traced only as part of a request's trace, never as traces of their own.
        requireParentforOutgoingSpans: true,
      }),
      // The route names the server span (`GET /api/cli/auth/me`) and its handler is a span; the
      // dozen middlewares every request passes (helmet, body parsers, checks) are not: a span each
      // doubled what tracing cost a request, and said nothing the handler's span does not.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      // The statement's text with its $1 placeholders, never the values bound to them (passwords'
      // hashes, tokens' digests, addresses); and only statements run for a traced request, not the
      // mail worker's and the revocation listener's background ones every second.
      new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true }),
    ],
  });
  sdk.start();
  for (const module of ['node:http', 'node:https', 'express']) require(module);
  // Named ESM imports of node:http see the patched functions too.
  syncBuiltinESMExports();
  keepPoolWaitersInTheirOwnContext(require('pg') as PgPoolClass, api);

  return {
    logFields() {
      const span = api.trace.getSpan(api.context.active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    async shutdown(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), Math.max(0, timeoutMs))));
      try {
        return await Promise.race([sdk.shutdown().then(() => 'flushed' as const, () => 'failed' as const), timedOut]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

type PgPoolClass = { Pool: { prototype: { connect: (this: unknown, callback?: unknown) => unknown } } };

/**
 * pg-pool hands a freed connection to the next waiter by calling its callback from the code that
 * freed it, so a waiter (TypeORM waits with a callback) would run in the freeing request's
 * context: the mail worker's background statements showed up in whichever request's trace last
 * released a connection. Bound to the context it was called in, the callback runs in its own.
 */
function keepPoolWaitersInTheirOwnContext(pg: PgPoolClass, api: typeof OtelApi): void {
  const connect = pg.Pool.prototype.connect;
  pg.Pool.prototype.connect = function (this: unknown, callback?: unknown) {
    return connect.call(this, typeof callback === 'function' ? api.context.bind(api.context.active(), callback as () => void) : callback);
  };
}

/** `a=1&b=x` → `a=REDACTED&b=REDACTED`; undefined without a query. */
function queryNamesOnly(url: string | undefined): string | undefined {
  const q = url?.indexOf('?') ?? -1;
  if (q === -1 || q === url!.length - 1) return undefined;
  const params = new URLSearchParams(url!.slice(q + 1));
  return [...params.keys()].map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&');
}
