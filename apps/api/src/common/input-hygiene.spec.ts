import { hasUnsafeText, InviteUserRequestSchema, IssueTokenRequestSchema, looksLikeEmail, MAX_EMAIL_LENGTH, MAX_EMAIL_LOCAL_PART_LENGTH, RegisterClientRequestSchema } from '@prospect/contract';

/**
 * The two rules every door applies to what a person types (libs/contract text.ts, which the
 * zod schemas of the API and the page controllers both call): which e-mail addresses are
 * accepted, and which characters a name may not hold.
 */
describe('looksLikeEmail: the practical RFC 5321 subset', () => {
  const local = (n: number) => 'a'.repeat(n);
  /** A domain of `length` characters: 63-character labels, then the rest, then `.com`. */
  const domainOf = (length: number) => {
    const labels: string[] = [];
    let left = length - 4;
    while (left > 0) {
      const size = Math.min(63, left);
      labels.push('d'.repeat(size));
      left -= size + 1;
    }
    return `${labels.join('.')}.com`;
  };

  it.each([
    'ada@example.com',
    'Ada.Lovelace@Example.COM',
    'ada+prospect@mail.example.co.uk',
    "o'brien@example.com",
    "a!#$%&'*+/=?^_`{|}~-z@example.com",
    'user@xn--bcher-kva.example',
    'user@sub-domain.example-1.com',
    '1@2.io',
    `${local(MAX_EMAIL_LOCAL_PART_LENGTH)}@example.com`,
  ])('accepts %s', (address) => {
    expect(looksLikeEmail(address)).toBe(true);
  });

  it('accepts 254 characters in all, not 255', () => {
    const at254 = `${local(64)}@${domainOf(254 - 65)}`;
    expect(at254).toHaveLength(MAX_EMAIL_LENGTH);
    expect(looksLikeEmail(at254)).toBe(true);
    const at255 = `${local(64)}@${domainOf(255 - 65)}`;
    expect(at255).toHaveLength(255);
    expect(looksLikeEmail(at255)).toBe(false);
  });

  it.each<[string, string]>([
    ['a display name', 'x<victim@example.com>'],
    ['a display name with a space', 'Eve <victim@example.com>'],
    ['angle brackets alone', '<victim@example.com>'],
    ['a list', 'eve@example.com,victim@example.com'],
    ['a quoted local part', '"eve victim"@example.com'],
    ['a quote in the local part', 'eve"@example.com'],
    ['a comment', 'eve(comment)@example.com'],
    ['a comment in the domain', 'eve@example.com(comment)'],
    ['an IPv4 literal', 'eve@[192.0.2.1]'],
    ['an IPv6 literal', 'eve@[IPv6:2001:db8::1]'],
    ['a dotted IPv4 address as the domain', 'eve@192.0.2.1'],
    ['a space inside', 'eve victim@example.com'],
    ['a space around (callers trim first)', ' eve@example.com'],
    ['a tab', 'eve\t@example.com'],
    ['a NUL', 'eve\u0000@example.com'],
    ['a newline (header injection)', 'eve@example.com\nBcc: victim@example.com'],
    ['a zero-width space', 'ad\u200bmin@example.com'],
    ['a bidi override', 'eve\u202e@example.com'],
    ['a BOM', '\ufeffeve@example.com'],
    ['a non-ASCII local part', 'jürgen@example.com'],
    ['a non-ASCII domain (punycode it)', 'user@bücher.example'],
    ['a Cyrillic letter in the domain', 'user@exаmple.com'],
    ['two @', 'eve@victim@example.com'],
    ['no @', 'eve.example.com'],
    ['nothing before the @', '@example.com'],
    ['nothing after the @', 'eve@'],
    ['a leading dot', '.eve@example.com'],
    ['a trailing dot in the local part', 'eve.@example.com'],
    ['two dots in a row', 'e..ve@example.com'],
    ['a single-label domain', 'eve@localhost'],
    ['an empty label', 'eve@example..com'],
    ['a trailing dot in the domain', 'eve@example.com.'],
    ['a label starting with a hyphen', 'eve@-example.com'],
    ['a label ending with a hyphen', 'eve@example-.com'],
    ['an underscore in the domain', 'eve@ex_ample.com'],
    ['a 64-character label', `eve@${'d'.repeat(64)}.com`],
    ['a backslash', 'eve\\@example.com'],
    ['a semicolon', 'eve;victim@example.com'],
    ['a colon (source route)', '@relay.example:eve@example.com'],
    ['65 characters before the @', `${local(65)}@example.com`],
    ['an empty string', ''],
  ])('refuses %s', (_, address) => {
    expect(looksLikeEmail(address)).toBe(false);
  });

  it('is what the wire schemas hold an address to (invitations, userEmail)', () => {
    expect(InviteUserRequestSchema.safeParse({ email: ' ada@example.com ', name: 'Ada' })).toEqual({ success: true, data: { email: 'ada@example.com', name: 'Ada' } });
    expect(InviteUserRequestSchema.safeParse({ email: 'x<victim@example.com>', name: 'Ada' }).success).toBe(false);
    expect(IssueTokenRequestSchema.safeParse({ userEmail: 'ada@example.com' }).success).toBe(true);
    expect(IssueTokenRequestSchema.safeParse({ userEmail: 'x<victim@example.com>' }).success).toBe(false);
    expect(IssueTokenRequestSchema.safeParse({ userEmail: 'a@b' }).success).toBe(false);
  });
});

describe('hasUnsafeText: no control or invisible character in what a person reads', () => {
  it.each([
    'Ada Lovelace',
    'José Ñúñez',
    'Zoë O’Brien-Smith',
    '李小龍',
    'Grace 🚀',
    'עברית',
    // Direction marks in right-to-left text, where they place the punctuation and Latin words.
    'עברית\u200f CLI',
    'محمد (Mo)\u200e',
    // Joiners between letters of scripts that need them, and in emoji sequences.
    'رحیم\u200cزاده',
    'क्\u200dष',
    'dev 👩\u200d💻',
    'dev 👩🏽\u200d💻',
    'love ❤️',
    'on fire ❤️\u200d🔥',
    // A variation selector after an ideograph (an IVS for a name's own glyph).
    '葛\u{e0100}飾',
  ])('accepts %j', (text) => {
    expect(hasUnsafeText(text)).toBe(false);
  });

  it.each<[string, string]>([
    ['a zero-width space', 'ad\u200bmin'],
    ['a zero-width non-joiner between Latin letters', 'ad\u200cmin'],
    ['a zero-width joiner between Latin letters', 'ad\u200dmin'],
    ['a joiner at the end', 'رحیم\u200c'],
    ['a joiner at the start', '\u200dزاده'],
    ['a joiner next to ASCII in a script that joins', 'رحیم\u200cx'],
    ['two joiners', 'رحیم\u200c\u200cزاده'],
    ['a left-to-right mark in Latin text', 'ad\u200emin'],
    ['a right-to-left mark in Latin text', 'admin\u200f'],
    ['an Arabic letter mark in Latin text', 'ad\u061cmin'],
    ['a word joiner', 'ad\u2060min'],
    ['an invisible separator', 'ad\u2063min'],
    ['a BOM inside', 'ad\ufeffmin'],
    ['a soft hyphen', 'ad\u00admin'],
    ['a Mongolian vowel separator', 'ad\u180emin'],
    ['a Hangul filler', 'ad\u3164min'],
    ['a halfwidth Hangul filler', '\uffa0'],
    ['a combining grapheme joiner', 'ad\u034fmin'],
    ['a variation selector after ASCII', 'ad\ufe0fmin'],
    ['a variation selector first', '\ufe0fadmin'],
    ['a tag character', 'admin\u{e0041}'],
    ['a line separator', 'ad\u2028min'],
    ['a paragraph separator', 'ad\u2029min'],
    ['a left-to-right embedding', 'ad\u202amin'],
    ['a right-to-left override', 'ad\u202emin'],
    ['a right-to-left override in right-to-left text', 'עברית\u202e'],
    ['a first-strong isolate', 'ad\u2068min'],
    ['a pop directional isolate', 'ad\u2069min'],
    ['an escape sequence', 'Acme\u001b[31m'],
    ['a newline', 'Ada\nLovelace'],
    ['a carriage return', 'Ada\rLovelace'],
    ['a tab', 'Ada\tLovelace'],
    ['DEL', 'Ada\u007f'],
    ['a C1 control', 'Ada\u0085'],
    ['a NUL', 'Ada\u0000'],
  ])('refuses %s', (_, text) => {
    expect(hasUnsafeText(text)).toBe(true);
  });

  it('is what the wire schemas hold names and labels to (invitations, token labels, client names)', () => {
    expect(InviteUserRequestSchema.safeParse({ email: 'ada@example.com', name: 'ad\u200bmin' }).success).toBe(false);
    expect(IssueTokenRequestSchema.safeParse({ label: 'ci\u2060' }).success).toBe(false);
    expect(RegisterClientRequestSchema.safeParse({ id: 'acme-sync', name: 'Acme\u200dSync', allowedScopes: ['profile'] }).success).toBe(false);
    expect(RegisterClientRequestSchema.safeParse({ id: 'acme-sync', name: 'Acme Sync', allowedScopes: ['profile'] }).success).toBe(true);
  });
});
