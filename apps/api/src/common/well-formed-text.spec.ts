import { findUnreadableInput, MAX_INPUT_DEPTH, malformedTextMessage, tooDeepMessage } from './well-formed-text.js';

/** `levels` arrays inside each other, innermost `inner`, built without recursion. */
function nested(levels: number, inner: unknown = 'x'): unknown {
  let value: unknown = inner;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/**
 * `value` with every object and array in it behind a proxy (put on as the walk reaches it)
 * that counts the values the walk reads and the containers it reads them from: the walk's
 * work, counted by what it does rather than by how long it takes.
 */
function counted(value: unknown, work = { read: 0, opened: new Set<object>() }): { value: unknown; work: typeof work } {
  if (value === null || typeof value !== 'object') return { value, work };
  const proxy = new Proxy(value, {
    get: (target, key) => {
      if (Object.prototype.propertyIsEnumerable.call(target, key)) {
        work.read += 1;
        work.opened.add(target);
      }
      return counted(Reflect.get(target, key), work).value;
    },
  });
  return { value: proxy, work };
}

describe('findUnreadableInput', () => {
  it('accepts ordinary input', () => {
    expect(findUnreadableInput({ clientName: 'prospect CLI', tags: ['a', 'b'], n: 1, ok: true, none: null })).toBeNull();
    expect(findUnreadableInput(undefined)).toBeNull();
    expect(findUnreadableInput(nested(MAX_INPUT_DEPTH))).toBeNull();
  });

  it('names the field of text that cannot be stored, by its path', () => {
    expect(findUnreadableInput({ user: { name: 'ok', tags: ['fine', 'bad\u0000'] } })).toBe(malformedTextMessage('user.tags.1'));
    expect(findUnreadableInput({ hostname: '\ud800' })).toBe(malformedTextMessage('hostname'));
    expect(findUnreadableInput({ nested: { 'la\u0000bel': 'x' } })).toBe(malformedTextMessage('nested.(a field name)'));
    expect(findUnreadableInput('\u0000')).toBe(malformedTextMessage('body'));
    // The first problem in the order of the body.
    expect(findUnreadableInput({ a: 'ok', b: '\u0000', c: '\u0000' })).toBe(malformedTextMessage('b'));
  });

  it(`refuses nesting past ${MAX_INPUT_DEPTH} levels, opening no more than that many`, () => {
    expect(findUnreadableInput(nested(MAX_INPUT_DEPTH + 1))).toBe(tooDeepMessage);
    expect(tooDeepMessage).toContain(String(MAX_INPUT_DEPTH));
    // 8,000 levels (a 16 KiB body of brackets), and far more than a call stack holds.
    for (const levels of [8_000, 200_000]) {
      const { value, work } = counted(nested(levels));
      expect(findUnreadableInput(value)).toBe(tooDeepMessage);
      expect(work.opened.size).toBe(MAX_INPUT_DEPTH);
      expect(work.read).toBe(MAX_INPUT_DEPTH);
    }
  });

  it('looks at each value once, however wide or deep the input (work linear in its size)', () => {
    const wide = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`k${i}`, i % 2 ? 'text' : { a: [i, 'x'] }]));
    const { value, work } = counted(wide);
    expect(findUnreadableInput(value)).toBeNull();
    const containers = 1 + 1_500 * 2; // the object, and each small object with its array
    const values = 3_000 + 1_500 * 3; // every key's value, each small object's `a`, each array's two items
    expect(work.opened.size).toBe(containers);
    expect(work.read).toBe(values);

    const { value: deep, work: deepWork } = counted(nested(MAX_INPUT_DEPTH - 1, { a: 'x', b: 'y' }));
    expect(findUnreadableInput(deep)).toBeNull();
    expect(deepWork.opened.size).toBe(MAX_INPUT_DEPTH);
  });
});
