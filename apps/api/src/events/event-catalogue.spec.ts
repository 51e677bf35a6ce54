import { readFileSync } from 'node:fs';
import { EVENT_ID_PATTERN, EVENT_TYPES } from '@prospect/contract';
import { INTERNAL_TYPES_OF } from './event-catalogue.js';
import { eventId, positionOf, STREAM_START } from './event-id.js';

describe('event ids', () => {
  it('round-trip, and sort as text in the stream order (writer xid, then row id)', () => {
    const positions = [STREAM_START, { xid: 0n, id: 5n }, { xid: 0n, id: 31n }, { xid: 1n, id: 1n }, { xid: 900n, id: 2n }, { xid: 900n, id: 2n ** 63n - 1n }, { xid: 2n ** 40n, id: 0n }];
    const ids = positions.map(eventId);
    for (const [i, id] of ids.entries()) {
      expect(id).toMatch(EVENT_ID_PATTERN);
      expect(positionOf(id)).toEqual(positions[i]);
    }
    expect([...ids].sort()).toEqual(ids);
    expect(eventId(STREAM_START)).toBe('evt_00000000000000000000000000');
  });

  it('refuses what is not one', () => {
    for (const text of ['', 'evt_', 'evt_0000000000000000000000000', 'evt_0000000000000000000000000i', 'EVT_00000000000000000000000000', 'evt_zzzzzzzzzzzzzzzzzzzzzzzzzz']) expect(positionOf(text)).toBeUndefined();
  });
});

describe('the catalogue', () => {
  it('gives every public type at least one internal type, and docs/events.md lists every one', () => {
    const docs = readFileSync(new URL('../../../../docs/events.md', import.meta.url), 'utf8');
    for (const type of EVENT_TYPES) {
      expect({ type, internal: (INTERNAL_TYPES_OF.get(type) ?? []).length > 0 }).toEqual({ type, internal: true });
      expect({ type, documented: docs.includes(`| \`${type}\` |`) }).toEqual({ type, documented: true });
    }
  });
});
