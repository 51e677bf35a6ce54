import { EVENT_ID_PATTERN } from '@prospect/contract';

/** Crockford's base32, lower case: digits sort before letters, so fixed-width text sorts as its number. */
const DIGITS = '0123456789abcdefghjkmnpqrstvwxyz';
const WIDTH = 26; // 130 bits: room for the two 64-bit halves
const U64 = (1n << 64n) - 1n;

/** A position in the stream: the writing transaction's 64-bit id, then the row's id. */
export interface StreamPosition {
  xid: bigint;
  id: bigint;
}

/** The start of the stream: before every event (even those written before the stream existed, whose xid is 0). */
export const STREAM_START: StreamPosition = { xid: 0n, id: 0n };

/**
 * An event's public id, also the cursor: `evt_` and the position as one 128-bit number in base32,
 * so ids sort as text in the stream's order. Opaque to clients; not a secret (it only says where an
 * event sits in the stream).
 */
export function eventId(position: StreamPosition): string {
  let n = ((position.xid & U64) << 64n) | (position.id & U64);
  let text = '';
  for (let i = 0; i < WIDTH; i++) {
    text = DIGITS[Number(n & 31n)] + text;
    n >>= 5n;
  }
  return `evt_${text}`;
}

/** The position an id or cursor names; undefined for anything that is not one. */
export function positionOf(id: string): StreamPosition | undefined {
  if (!EVENT_ID_PATTERN.test(id)) return undefined;
  let n = 0n;
  for (const char of id.slice(4)) n = (n << 5n) | BigInt(DIGITS.indexOf(char));
  if (n >> 128n) return undefined; // the top 2 bits of 130 are never set by eventId
  return { xid: n >> 64n, id: n & U64 };
}
