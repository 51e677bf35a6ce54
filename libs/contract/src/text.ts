/**
 * Characters that must never reach a terminal or a page from text a person or a program
 * typed: C0 and C1 controls and DEL (escape sequences, BEL, CR/LF rewriting a line) and the
 * Unicode bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069),
 * which reorder what is shown so a name or a host reads as another ("Trojan Source",
 * CVE-2021-42574). What a terminal must never print (the CLI strips it, with the direction
 * marks); what people type is held to more (hasUnsafeText).
 */
export const UNSAFE_TEXT_CLASS = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069';
export const UNSAFE_TEXT_CHARACTER = new RegExp(`[${UNSAFE_TEXT_CLASS}]`);

/**
 * Characters nobody sees: C0 and C1 controls, format characters (Cf: zero-width space and
 * joiners, direction marks and controls, word joiner, BOM, soft hyphen, tags), line and
 * paragraph separators, and the other default-ignorable code points (Hangul fillers,
 * variation selectors). In a name, `ad\u200bmin` shows as `admin`.
 */
const INVISIBLE_CHARACTER = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
const VARIATION_SELECTOR = /^\p{Variation_Selector}$/u;
/** ZWNJ and ZWJ: Persian, Indic and other scripts need them between letters, emoji sequences (👩‍💻) between pictographs. */
const JOINERS = new Set(['\u200c', '\u200d']);
/** LRM, RLM, ALM: right-to-left text uses them to place the punctuation and Latin words around it. */
const DIRECTION_MARKS = new Set(['\u200e', '\u200f', '\u061c']);
const RIGHT_TO_LEFT_LETTER =
  /(?=\p{L})[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}\p{Script=Hanifi_Rohingya}]/u;

/** A character that shows, outside ASCII: where an invisible one may do its work next to it. */
const isVisibleNonAscii = (ch: string | undefined): boolean => ch !== undefined && ch > '\u007f' && !INVISIBLE_CHARACTER.test(ch);

/**
 * True when `text` holds a character that must not be in text a person reads later (names,
 * labels, client names, hosts): a control or bidi control (UNSAFE_TEXT_CHARACTER), or any
 * invisible character (INVISIBLE_CHARACTER), so no name looks like another or hides text.
 * Invisible characters stay allowed only where they do their work, never next to ASCII:
 * a joiner between two visible non-ASCII characters (after an emoji's variation selector too),
 * a variation selector right after a visible non-ASCII character (❤️, a kanji's variant),
 * and the direction marks in text that holds right-to-left letters.
 */
export function hasUnsafeText(text: string): boolean {
  if (UNSAFE_TEXT_CHARACTER.test(text)) return true;
  if (!INVISIBLE_CHARACTER.test(text)) return false;
  const chars = Array.from(text);
  const rightToLeft = RIGHT_TO_LEFT_LETTER.test(text);
  return chars.some((ch, i) => {
    if (!INVISIBLE_CHARACTER.test(ch)) return false;
    const before = chars[i - 1];
    if (VARIATION_SELECTOR.test(ch)) return !isVisibleNonAscii(before);
    if (JOINERS.has(ch)) {
      const joinsAfter = isVisibleNonAscii(before) || (before !== undefined && VARIATION_SELECTOR.test(before) && isVisibleNonAscii(chars[i - 2]));
      return !(joinsAfter && isVisibleNonAscii(chars[i + 1]));
    }
    if (DIRECTION_MARKS.has(ch)) return !rightToLeft;
    return true;
  });
}

/** "2026-12-23 10:00 UTC": a moment as pages and the terminal show it, to the minute. */
export const utcMinute = (date: Date | string | number): string => new Date(date).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

/** The sentence that refuses such text, after the field's name: "Invalid clientName: …". */
export const UNSAFE_TEXT_MESSAGE = 'it contains control characters, invisible characters or bidirectional text controls';

/** The longest address SMTP carries: a path of 256 octets less its angle brackets (RFC 5321 §4.5.3.1.3, errata 1690)… */
export const MAX_EMAIL_LENGTH = 254;
/** …and the longest local part (§4.5.3.1.1). */
export const MAX_EMAIL_LOCAL_PART_LENGTH = 64;

/** RFC 5322's dot-atom: atext runs joined by single dots, no dot first or last. */
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
/** A domain label: letters, digits, hyphens, no hyphen first or last, at most 63 (RFC 1035, 5890's LDH); `xn--` labels are IDNs. */
const LDH_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * An e-mail address in the practical subset of RFC 5321 that Prospect accepts, so the address
 * stored (and held unique) is the one every mail library and server delivers to:
 * `local@domain.tld`, the local part a dot-atom (letters, digits and
 * ``!#$%&'*+/=?^_`{|}~-``, dots only between them), the domain two or more LDH labels (an
 * international one as its ASCII `xn--` form), the last not all digits; at most 64 characters
 * before the @ and 254 in all. No display names (`Eve <victim@example.com>`, which a mailer
 * delivers to victim@example.com), quoted local parts, comments, IP literals, spaces or
 * anything outside ASCII.
 */
export function looksLikeEmail(text: string): boolean {
  if (text.length > MAX_EMAIL_LENGTH) return false;
  const at = text.indexOf('@');
  if (at < 1 || at > MAX_EMAIL_LOCAL_PART_LENGTH || text.indexOf('@', at + 1) >= 0) return false;
  if (!DOT_ATOM.test(text.slice(0, at))) return false;
  const labels = text.slice(at + 1).split('.');
  return labels.length >= 2 && labels.every((label) => LDH_LABEL.test(label)) && !/^\d+$/.test(labels.at(-1)!);
}
