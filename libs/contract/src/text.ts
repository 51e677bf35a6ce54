/**
 * Characters that must never reach a terminal or a page from text a person or a program
 * typed: C0 and C1 controls and DEL (escape sequences, BEL, CR/LF rewriting a line) and the
 * Unicode bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069),
 * which reorder what is shown so a name or a host reads as another ("Trojan Source",
 * CVE-2021-42574). The invisible direction marks (LRM, RLM, ALM) stay allowed: right-to-left
 * names use them, and they cannot reorder a run of text.
 */
export const UNSAFE_TEXT_CLASS = '\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069';
export const UNSAFE_TEXT_CHARACTER = new RegExp(`[${UNSAFE_TEXT_CLASS}]`);

/** True when `text` holds a control or bidi control character (UNSAFE_TEXT_CHARACTER). */
export const hasUnsafeText = (text: string): boolean => UNSAFE_TEXT_CHARACTER.test(text);

/** "2026-12-23 10:00 UTC": a moment as pages and the terminal show it, to the minute. */
export const utcMinute = (date: Date | string | number): string => new Date(date).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';

/** The sentence that refuses such text, after the field's name: "Invalid clientName: …". */
export const UNSAFE_TEXT_MESSAGE = 'it contains control characters or bidirectional text controls';

/** Enough of an e-mail address to send to: something@host.tld, no spaces (the mail itself proves the rest). */
export const looksLikeEmail = (text: string) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text);
