import { findMalformedQuery, findUnreadableInput, MAX_INPUT_DEPTH, malformedQueryMessage, malformedTextMessage, tooDeepMessage } from './well-formed-text.js';

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

describe('findMalformedQuery', () => {
  it.each([
    '/api/cli/auth/me',
    '/admin/users?q=ada&page=2',
    '/admin/users?q=J%C3%BCrgen', // ü
    '/admin/users?q=%F0%9F%9A%80', // an emoji, four bytes
    '/login?next=%2Fsettings%2Ftokens%3Fx%3D1',
    '/admin/users?q=100%', // a lone % stands for itself
    '/admin/users?q=%zz&x=%4',
    '/admin/users?q=a+b&flag',
    '/assets/app.css',
    '/api/admin/clients/%00', // the path is the routes' own
    '/admin/users/%FF?q=ok',
  ])('accepts %s', (url) => {
    expect(findMalformedQuery(url)).toBeNull();
  });

  it.each<[string, string, string]>([
    ['NUL in a value', '/api/admin/users?q=%00', 'q'],
    ['NUL among other text', '/admin/users?page=1&q=ad%00min', 'q'],
    ['a byte that is not UTF-8', '/device?user_code=%FF', 'user_code'],
    ['an overlong NUL', '/login?next=%C0%80', 'next'],
    ['an encoded surrogate', '/verify-email?token=%ED%A0%80', 'token'],
    ['a sequence cut short', '/invitation?token=%E2%82', 'token'],
    ['beyond U+10FFFF', '/email-change?token=%F4%90%80%80', 'token'],
    ['NUL in a name', '/admin/users?q%00=x', '(a parameter name)'],
    ['a bad byte in a name without a value', '/admin/users?%FF', '(a parameter name)'],
  ])('refuses %s, naming it', (_, url, named) => {
    expect(findMalformedQuery(url)).toBe(malformedQueryMessage(named));
  });

  it('names a parameter by its first 64 characters', () => {
    expect(findMalformedQuery(`/x?${'n'.repeat(500)}=%00`)).toBe(malformedQueryMessage('n'.repeat(64)));
  });
});
