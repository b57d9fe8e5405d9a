/**
 * Display width for code frames: a line is cut into cells (grapheme clusters), each with the text a
 * terminal is sent and the columns it takes: 2 for wide East Asian characters and emoji, 0 for
 * combining marks and other zero-width characters, TAB_WIDTH spaces for a tab, and the length of
 * its escape for a control character. Carets are placed by these widths. East Asian widths come from
 * get-east-asian-width (Unicode's EastAsianWidth.txt, ambiguous as narrow); emoji are the RGI
 * sequences (`\p{RGI_Emoji}`, the string-width rule without its per-call regex build).
 */
import { eastAsianWidth } from 'get-east-asian-width';
import { escapeControls } from './terminal.js';

/** Columns a tab takes in a frame (a tab is printed as spaces, so carets never depend on tab stops). */
export const TAB_WIDTH = 4;

export interface Cell {
  /** What is printed. */
  text: string;
  /** Columns it takes. */
  width: number;
  /** UTF-16 offset of the cluster in the line. */
  offset: number;
}

// made on first use: building one loads ICU's break rules (about 20 ms), and most lines never need it
let segmenter: Intl.Segmenter | undefined;

/** Text that is one column per UTF-16 unit. */
export const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Columns of a character that is a cluster on its own when a like character follows it, or -1:
 * printable ASCII and Latin letters (1), kana and CJK ideographs (2). Most text is made of these,
 * and they need no segmenter or emoji lookup (each of which costs tens of microseconds per line).
 */
function simpleWidth(code: number): number {
  if ((code >= 0x20 && code < 0x7f) || (code >= 0xa0 && code < 0x300 && code !== 0xad)) return 1;
  if ((code >= 0x3040 && code <= 0x30ff && code !== 0x3099 && code !== 0x309a) || (code >= 0x4e00 && code <= 0x9fff)) return 2;
  return -1;
}

/**
 * The cells of `line` (already cut to what may be shown). A simple character (above) followed by
 * another is a cell of its own; the stretches around other characters are segmented into grapheme
 * clusters (Intl.Segmenter). A cluster never starts with a simple character that a simple
 * character follows, so the stretches split at cluster boundaries.
 */
export function cells(line: string): Cell[] {
  const out: Cell[] = [];
  if (PRINTABLE_ASCII.test(line)) {
    for (let i = 0; i < line.length; i++) out.push({ text: line[i]!, width: 1, offset: i });
    return out;
  }
  const splits = (k: number): boolean => simpleWidth(line.charCodeAt(k)) > 0 && (k + 1 === line.length || simpleWidth(line.charCodeAt(k + 1)) > 0);
  let i = 0;
  while (i < line.length) {
    if (splits(i)) {
      out.push({ text: line[i]!, width: simpleWidth(line.charCodeAt(i)), offset: i });
      i++;
      continue;
    }
    let k = i + 1;
    while (k < line.length && !splits(k)) k++;
    for (const { segment, index } of (segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' })).segment(line.slice(i, k))) out.push(cell(segment, i + index));
    i = k;
  }
  return out;
}

// built from a string: TypeScript's ES2022 target does not know the v flag (Node 20 does)
// compiled on first use: the emoji property set is large, and most runs never draw a code frame
let emoji: RegExp | undefined;
let zeroWidth: RegExp | undefined;

/** Columns of one grapheme cluster (not a control character). */
function clusterWidth(g: string): number {
  if ((zeroWidth ??= /^[\p{Mn}\p{Me}\p{Cf}\p{Default_Ignorable_Code_Point}]/u).test(g)) return 0; // a combining mark or format character with no base
  if ((emoji ??= new RegExp('^\\p{RGI_Emoji}$', 'v')).test(g)) return 2;
  return eastAsianWidth(g.codePointAt(0)!, { ambiguousAsWide: false });
}

function cell(segment: string, offset: number): Cell {
  if (segment === '\t') return { text: ' '.repeat(TAB_WIDTH), width: TAB_WIDTH, offset };
  const text = escapeControls(segment);
  // an escaped control is plain ASCII, as wide as its escape
  return { text, width: text === segment ? clusterWidth(segment) : text.length, offset };
}

/** Columns `s` takes in a frame. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const c of cells(s)) w += c.width;
  return w;
}
