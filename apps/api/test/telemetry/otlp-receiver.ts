import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** A span as the receiver keeps it: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 2 is SERVER, 3 is CLIENT. */
  kind: number;
  scope: string;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

const valueOf = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? v.arrayValue?.values?.map(valueOf);
const attributesOf = (list: KeyValue[] = []) => Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

/**
 * A small OTLP/HTTP trace receiver, as a collector listens on :4318: POST /v1/traces with the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends: hex ids, typed attribute values),
 * gzip or not. Anything else is refused with 415, so a change of encoding fails loudly.
 */
export async function otlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const refused: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.startsWith('application/json')) {
        refused.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(415).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      const body = JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8')) as {
        resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ scope?: { name?: string }; spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: KeyValue[] }> }> }>;
      };
      for (const { resource, scopeSpans = [] } of body.resourceSpans ?? []) {
        for (const { scope, spans: batch = [] } of scopeSpans) {
          for (const span of batch) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              kind: span.kind,
              scope: scope?.name ?? '',
              attributes: attributesOf(span.attributes),
              resource: attributesOf(resource?.attributes),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    refused,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
