import { currentRequest } from '../common/request-context.js';
import { clipUserAgent } from './audit.service.js';
import type { AuthEventType } from './auth-event.entity.js';

/**
 * One audit event row (or one per row of `from`) for auditInsert: each field a SQL expression of
 * the statement that embeds it (`$3`, a column of one of its CTEs), never a value spliced in.
 */
export interface AuditRowSql {
  type: AuthEventType;
  userId: string;
  ip: string;
  detail: string;
  createdAt: string;
  /** The caller's User-Agent (clipped: requestUserAgent()), a parameter of the statement; none: NULL (no request behind it). */
  userAgent?: string;
  /** What the row is selected from, with its condition (`changed`, `redeemed WHERE unproven`); none for one row of parameters. */
  from?: string;
}

/** Event types are words and dots (AuthEventType); checked once more before one becomes a SQL literal. */
const EVENT_TYPE = /^[a-z_]+\.[a-z_]+$/;

/**
 * The INSERT of audit events as SQL text, for a repository of another module to embed in the
 * statement of the change it records (a CTE, or the statement's last part), so the change and its
 * event commit together in one round trip: the hot paths (device start, approve/deny, cancel) and
 * the single-statement changes that were written that way before issue #37. audit/ owns
 * `auth_events`, so the statement's text lives here and its type is an AuthEventType: a misspelt
 * or unknown type does not compile. Everything else records through AuditService.record(type,
 * entry, tx). Only repositories import this file (scripts/check-boundaries.mjs).
 * @param returning what the INSERT returns (`id`, `1`), when the caller counts the events.
 */
export function auditInsert(rows: AuditRowSql | readonly AuditRowSql[], returning?: string): string {
  const selects = [rows].flat().map((row) => {
    if (!EVENT_TYPE.test(row.type)) throw new TypeError(`not an audit event type: ${row.type}`);
    return `SELECT '${row.type}', ${row.userId}, ${row.ip}, ${row.detail}, ${row.createdAt}, ${row.userAgent ?? 'NULL'}${row.from ? ` FROM ${row.from}` : ''}`;
  });
  return `INSERT INTO auth_events (type, user_id, ip, detail, created_at, user_agent)\n       ${selects.join('\n       UNION ALL ')}${returning ? `\n       RETURNING ${returning}` : ''}`;
}

/**
 * The parameter a statement passes as its audit row's `userAgent`: the User-Agent of the request
 * being handled (common/request-context.ts), clipped as the log keeps it; null outside a request.
 */
export const requestUserAgent = (): string | null => clipUserAgent(currentRequest()?.userAgent);
