import { UNSAFE_TEXT_CLASS } from '@prospect/contract';
/** Complete ANSI sequences: CSI (`ESC [ … final`, or its one-byte form U+009B) and OSC (`ESC ] … BEL` or `… ESC \`). */
const ANSI_SEQUENCE = /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g;
/**
 * Whatever C0 and C1 control characters are left (ESC, BEL, CR, backspace, …), and the
 * bidirectional controls: embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069),
 * which reorder what follows so one name or host reads as another ("Trojan Source"), and the
 * direction marks (LRM, RLM, ALM), which move the punctuation around what we print.
 */
const CONTROL = new RegExp(`[${UNSAFE_TEXT_CLASS}\\u061c\\u200e\\u200f]`, 'g');

/**
 * A string from the server, made safe to print: a hostile server could otherwise
 * retitle the terminal, clear or rewrite lines (hiding the real host behind a fake
 * one), colour a warning away, or reverse a host name. Sequences are removed whole,
 * so no `[31m` is left.
 */
export function stripControls(text: string): string {
  return text.replace(ANSI_SEQUENCE, '').replace(CONTROL, '');
}

/** Every string (and key) of a parsed JSON answer, stripped. */
export function stripControlsDeep(value: unknown): unknown {
  if (typeof value === 'string') return stripControls(value);
  if (Array.isArray(value)) return value.map(stripControlsDeep);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [stripControls(key), stripControlsDeep(item)]));
  }
  return value;
}
