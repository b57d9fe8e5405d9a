/**
 * Display width for code frames: a line is cut into cells (grapheme clusters), each with the text a
 * terminal is sent and the columns it takes: 2 for wide East Asian characters and emoji, 0 for
 * combining marks and other zero-width characters (string-width decides), TAB_WIDTH spaces for a
 * tab, and the length of its escape for a control character. Carets are placed by these widths.
 */
import stringWidth from 'string-width';
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

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

function isAscii(code: number): boolean {
  return code >= 0x20 && code < 0x7f;
}

/**
 * The cells of `line` (already cut to what may be shown). Printable ASCII followed by ASCII is a
 * cell of its own with no lookup (and Intl.Segmenter slows down on long runs); the stretches around
 * other characters are segmented into grapheme clusters. A cluster never starts with an ASCII
 * character that another ASCII character follows, so the stretches split at cluster boundaries.
 */
export function cells(line: string): Cell[] {
  const out: Cell[] = [];
  let i = 0;
  while (i < line.length) {
    const code = line.charCodeAt(i);
    if (isAscii(code) && (i + 1 === line.length || isAscii(line.charCodeAt(i + 1)))) {
      out.push({ text: line[i]!, width: 1, offset: i });
      i++;
      continue;
    }
    let k = i + 1;
    while (k < line.length && !(isAscii(line.charCodeAt(k)) && (k + 1 === line.length || isAscii(line.charCodeAt(k + 1))))) k++;
    for (const { segment, index } of segmenter.segment(line.slice(i, k))) out.push(cell(segment, i + index));
    i = k;
  }
  return out;
}

function cell(segment: string, offset: number): Cell {
  if (segment === '\t') return { text: ' '.repeat(TAB_WIDTH), width: TAB_WIDTH, offset };
  const text = escapeControls(segment);
  // an escaped control is plain ASCII; a lone combining mark still takes no column
  return { text, width: text === segment ? stringWidth(segment) : text.length, offset };
}

/** Columns `s` takes in a frame. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const c of cells(s)) w += c.width;
  return w;
}
