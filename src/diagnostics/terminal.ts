/**
 * Text from a user's file or an agent, made safe for a terminal: control characters (an escape
 * sequence can retitle the window, clear the screen or hide text) and bidirectional overrides are
 * shown as escapes, and very long text is cut.
 */

// C0 controls but tab and line feed, DEL, C1 controls, bidi embeddings/overrides/isolates, lone surrogates
const UNSAFE = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const UNSAFE_WITH_NEWLINE = /[\x00-\x08\x0A-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function escapeChar(ch: string): string {
  const c = ch.charCodeAt(0);
  if (c === 10) return '\\n';
  if (c === 13) return '\\r';
  return c <= 0xff ? `\\x${c.toString(16).toUpperCase().padStart(2, '0')}` : `\\u{${c.toString(16).toUpperCase()}}`;
}

/** Escapes what a terminal would interpret. `keepNewlines` leaves line feeds (multi-line messages). */
export function escapeControls(s: string, opts: { keepNewlines?: boolean } = {}): string {
  return s.replace(opts.keepNewlines ? UNSAFE : UNSAFE_WITH_NEWLINE, escapeChar);
}

/** Cuts `s` to at most `max` characters, saying how much was left out. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  let cut = max;
  const c = s.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--; // never split a surrogate pair
  return `${s.slice(0, cut)}… (${(s.length - cut).toLocaleString('en-US')} more characters)`;
}

/** The form of user text for a terminal: escaped, then cut. */
export function safeText(s: string, max = 1000, opts: { keepNewlines?: boolean } = {}): string {
  return escapeControls(clip(s, max), opts);
}
