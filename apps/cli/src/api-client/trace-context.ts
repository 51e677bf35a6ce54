import { randomBytes } from 'node:crypto';

/**
 * The W3C trace context this command's requests carry (`traceparent`), so the server's spans of
 * one command form one trace: the trace of TRACEPARENT when the environment holds a valid one (a
 * CI job's or a script's, whose flags are kept), else a new trace for this invocation. Each
 * request is a span of its own (a new parent id). Fixed on first use: one command, one trace.
 */
let commandTrace: { traceId: string; flags: string } | undefined;

/** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; ids of zeros and version ff are invalid; a later version may add fields. */
const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(-.*)?$/;

export function traceparent(): string {
  commandTrace ??= traceOf(process.env.TRACEPARENT) ?? { traceId: nonZeroHex(16), flags: '01' };
  return `00-${commandTrace.traceId}-${nonZeroHex(8)}-${commandTrace.flags}`;
}

function traceOf(given: string | undefined): { traceId: string; flags: string } | undefined {
  const match = TRACEPARENT.exec(given?.trim() ?? '');
  if (!match) return undefined;
  const [, version, traceId, parentId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined) || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  return { traceId: traceId!, flags: flags! };
}

function nonZeroHex(bytes: number): string {
  for (;;) {
    const hex = randomBytes(bytes).toString('hex');
    if (!/^0+$/.test(hex)) return hex;
  }
}
