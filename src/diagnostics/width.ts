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

/** The cells of `line` (already cut to what may be shown). */
export function cells(line: string): Cell[] {
  const out: Cell[] = [];
  for (const { segment, index } of segmenter.segment(line)) {
    if (segment === '\t') out.push({ text: ' '.repeat(TAB_WIDTH), width: TAB_WIDTH, offset: index });
    else {
      const text = escapeControls(segment);
      // an escaped control is plain ASCII; a lone combining mark still takes no column
      out.push({ text, width: text === segment ? stringWidth(segment) : text.length, offset: index });
    }
  }
  return out;
}

/** Columns `s` takes in a frame. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const c of cells(s)) w += c.width;
  return w;
}
