import { AsyncLocalStorage } from 'node:async_hooks';

/** What is known of the request being handled, wherever its handling has reached. */
export interface RequestContext {
  /** The request's id (logging/logger.ts: the caller's `X-Request-Id` or a new one). */
  id: string;
  /** The caller's User-Agent header as sent (none: null); the audit log clips it. */
  userAgent: string | null;
}

/**
 * The request being handled, set once per request by logging/'s requestLogger middleware: Node's own
 * AsyncLocalStorage follows it through awaits and callbacks, with no request-scoped providers. Its
 * log lines name the request by it, and the audit log records its User-Agent by it without every
 * service taking the request as a parameter. Background work (the outbox workers, retention) runs
 * outside any request and sees none.
 */
export const requestContext = new AsyncLocalStorage<RequestContext>();

/** The request being handled, or undefined outside one. */
export const currentRequest = (): RequestContext | undefined => requestContext.getStore();
