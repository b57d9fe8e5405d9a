/** Rendering diagnostics: a compiler-style text form with code frames, and the `--json` form. */
import pc from 'picocolors';
import { dottedPath } from '../core/path.js';
import type { Diagnostic } from './diagnostic.js';
import { SourceFile } from './source.js';
import { escapeControls, safeText } from './terminal.js';
import { cells, PRINTABLE_ASCII } from './width.js';

/** Columns of a source line shown in a code frame when the terminal's width is unknown: a long line is cut to a window around the column. */
export const FRAME_WIDTH = 120;
/** Longest message, hint or note printed (a name from the file may be megabytes long). */
const MAX_MESSAGE_CHARS = 1000;

export interface RenderOptions {
  color: boolean;
  /** Columns of the terminal the frame goes to: long lines are cut to fit. Absent: FRAME_WIDTH columns of source. */
  width?: number | undefined;
}

/**
 * The colours a rendering uses (picocolors' `createColors()` gives them). Declared here rather than
 * taken from picocolors' types: the published declarations then name no default import of a CommonJS
 * module, which a consumer without `esModuleInterop` could not read.
 */
export interface Colors {
  bold: (s: string) => string;
  dim: (s: string) => string;
  red: (s: string) => string;
  yellow: (s: string) => string;
  blue: (s: string) => string;
  cyan: (s: string) => string;
}

/** `file:line:col: error[code]: message`, a code frame with a caret under the range, the hint. */
export function renderDiagnostic(d: Diagnostic, source: SourceFile, opts: RenderOptions): string {
  const c: Colors = pc.createColors(opts.color);
  const lines: string[] = [];
  const pos = d.range ? source.position(d.range[0]) : undefined;
  const name = escapeControls(source.name);
  const where = pos ? `${name}:${pos.line}:${pos.column}` : name;
  const sev = d.severity === 'error' ? c.red(c.bold('error')) : c.yellow(c.bold('warning'));
  lines.push(`${c.bold(where)}: ${sev}[${d.code}]: ${c.bold(safeText(d.message, MAX_MESSAGE_CHARS))}`);
  if (d.range && pos) lines.push(...frame(source, d.range, d.severity === 'error' ? c.red : c.yellow, c, opts.width));
  for (const rel of d.related ?? []) {
    if (!rel.range) continue;
    const rp = source.position(rel.range[0]);
    lines.push(`  ${c.dim('note')}: ${safeText(rel.message, MAX_MESSAGE_CHARS)} at ${name}:${rp.line}:${rp.column}`);
    lines.push(...frame(source, rel.range, c.blue, c, opts.width));
  }
  if (d.hint) lines.push(`  ${c.cyan('hint')}: ${safeText(d.hint, MAX_MESSAGE_CHARS)}`);
  return lines.join('\n');
}

function frame(source: SourceFile, range: readonly [number, number], paint: (s: string) => string, c: Colors, maxWidth: number | undefined): string[] {
  const start = source.position(range[0]);
  const endPos = source.position(Math.max(range[0], range[1] - 1));
  const out: string[] = [];
  const first = Math.max(1, start.line - 1);
  const gutter = String(start.line + 1).length;
  // the width left for source text: the terminal's less the gutter and two ellipses, else FRAME_WIDTH
  const room = maxWidth === undefined ? FRAME_WIDTH : Math.max(MIN_FRAME_WIDTH, maxWidth - gutter - 5);
  const lineText = source.line(start.line);
  const col0 = Math.min(start.column - 1, lineText.length);
  const end0 = endPos.line === start.line ? Math.min(lineText.length, Math.max(col0 + 1, endPos.column)) : lineText.length;
  const main = windowed(lineText, col0, end0, room);
  for (let n = first; n < start.line; n++) {
    // a context line is shown from the same column as the line with the range
    out.push(`${c.dim(`${String(n).padStart(gutter)} |`)} ${fromColumn(source.line(n), main.fromColumn, main.fromOffset, room)}`);
  }
  out.push(`${c.dim(`${String(start.line).padStart(gutter)} |`)} ${main.text}`);
  out.push(`${' '.repeat(gutter)} ${c.dim('|')} ${' '.repeat(main.caretAt)}${paint('^'.repeat(Math.max(1, Math.min(main.caretWidth, 80))))}`);
  return out;
}

/** Narrowest source window, whatever the terminal says. */
const MIN_FRAME_WIDTH = 20;

interface Window {
  text: string;
  /** Display column (in the whole line) where the window starts; undefined when the line was too long to measure whole. */
  fromColumn: number | undefined;
  /** UTF-16 offset in the line where the window starts. */
  fromOffset: number;
  /** Columns before the caret, in the printed text. */
  caretAt: number;
  caretWidth: number;
}

/**
 * The part of `line` shown around [col0, end0) in at most `room` columns, with `…` where it was cut.
 * A huge line is first cut in UTF-16 units around the range, so a 5 MB line is never measured whole.
 */
function windowed(line: string, col0: number, end0: number, room: number): Window {
  const slack = room * 4;
  let lo = Math.max(0, col0 - slack);
  // past the range's start only `room` columns are shown: a long range is not measured whole either
  let hi = Math.min(line.length, col0 + 1 + 2 * slack);
  if (lo > 0 && isLowSurrogate(line.charCodeAt(lo))) lo--;
  if (hi < line.length && isLowSurrogate(line.charCodeAt(hi))) hi++;
  const slice = line.slice(lo, hi);
  // plain ASCII (most lines): columns are offsets, no cells needed
  if (PRINTABLE_ASCII.test(slice)) return asciiWindow(line, slice, lo, hi, col0, end0, room);
  const cs = cells(slice);
  const widths = cs.map((x) => x.width);
  const total = widths.reduce((a, b) => a + b, 0);
  let before = 0; // columns before the range
  let span = 0; // columns of the range
  for (const x of cs) {
    const at = x.offset + lo;
    if (at < col0) before += x.width;
    else if (at < end0) span += x.width;
  }
  if (lo === 0 && hi === line.length && total <= room) return { text: cs.map((x) => x.text).join(''), fromColumn: 0, fromOffset: 0, caretAt: before, caretWidth: Math.max(1, span) };
  // the range starts a third of the way in, unless the line ends sooner
  let from = Math.max(0, Math.min(before - Math.floor(room / 3), total - room));
  let col = 0;
  let i = 0;
  for (; i < cs.length && col + widths[i]! <= from; i++) col += widths[i]!;
  from = col;
  let text = '';
  let used = 0;
  let j = i;
  for (; j < cs.length && used + widths[j]! <= room; j++) {
    text += cs[j]!.text;
    used += widths[j]!;
  }
  const cutLeft = lo > 0 || i > 0;
  const cutRight = hi < line.length || j < cs.length;
  return {
    text: `${cutLeft ? '…' : ''}${text}${cutRight ? '…' : ''}`,
    fromColumn: lo > 0 ? undefined : from,
    fromOffset: lo + (cs[i]?.offset ?? 0),
    caretAt: (cutLeft ? 1 : 0) + Math.max(0, before - from),
    caretWidth: Math.max(1, Math.min(span, from + room - before)),
  };
}

function asciiWindow(line: string, slice: string, lo: number, hi: number, col0: number, end0: number, room: number): Window {
  const total = slice.length;
  const before = col0 - lo;
  const span = Math.max(1, Math.min(end0, hi) - col0);
  if (lo === 0 && hi === line.length && total <= room) return { text: slice, fromColumn: 0, fromOffset: 0, caretAt: before, caretWidth: span };
  const from = Math.max(0, Math.min(before - Math.floor(room / 3), total - room));
  const to = Math.min(total, from + room);
  const cutLeft = lo + from > 0;
  const cutRight = lo + to < line.length;
  return {
    text: `${cutLeft ? '…' : ''}${slice.slice(from, to)}${cutRight ? '…' : ''}`,
    fromColumn: lo > 0 ? undefined : from,
    fromOffset: lo + from,
    caretAt: (cutLeft ? 1 : 0) + Math.max(0, before - from),
    caretWidth: Math.max(1, Math.min(span, from + room - before)),
  };
}

/**
 * A context line shown from display column `from`, in `room` columns. Far into a long line it starts
 * at the main window's UTF-16 offset instead, so a megabyte line is never measured whole.
 */
function fromColumn(line: string, from: number | undefined, fromOffset: number, room: number): string {
  const far = from === undefined || from > room * 8;
  let start = far ? Math.min(fromOffset, line.length) : 0;
  if (start > 0 && isLowSurrogate(line.charCodeAt(start))) start--;
  const skip = far ? 0 : (from ?? 0);
  const limit = start + (skip + room) * 4 + 16;
  const sliced = line.length > limit;
  const part = line.slice(start, sliced ? limit : line.length);
  if (PRINTABLE_ASCII.test(part)) {
    const cutRight = sliced || part.length > skip + room;
    return `${start > 0 || skip > 0 ? '…' : ''}${part.slice(skip, skip + room)}${cutRight ? '…' : ''}`;
  }
  const cs = cells(part);
  let col = 0;
  let text = '';
  let i = 0;
  for (; i < cs.length && col + cs[i]!.width <= skip; i++) col += cs[i]!.width;
  let used = 0;
  let j = i;
  for (; j < cs.length && used + cs[j]!.width <= room; j++) {
    text += cs[j]!.text;
    used += cs[j]!.width;
  }
  const cutLeft = start > 0 || i > 0;
  const cutRight = j < cs.length || sliced;
  return `${cutLeft ? '…' : ''}${text}${cutRight ? '…' : ''}`;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

export interface JsonDiagnostic {
  severity: Diagnostic['severity'];
  code: Diagnostic['code'];
  error?: string;
  message: string;
  hint?: string;
  path: string;
  line: number | null;
  column: number | null;
  end_line?: number;
  end_column?: number;
  related?: { message: string; path: string; line: number | null; column: number | null }[];
  [rfcField: string]: unknown;
}

/** The JSON form: RFC fields of the error class (phase_name, invalid_refs, suggestion) sit beside the core fields. */
export function diagnosticToJson(d: Diagnostic, source: SourceFile | undefined): JsonDiagnostic {
  const pos = d.range && source ? source.position(d.range[0]) : undefined;
  const end = d.range && source ? source.position(Math.max(d.range[0], d.range[1])) : undefined;
  const rfc: Record<string, unknown> = {};
  if (d.error && d.data) for (const [k, v] of Object.entries(d.data)) rfc[k] = v;
  return {
    ...rfc,
    severity: d.severity,
    code: d.code,
    ...(d.error ? { error: d.error } : {}),
    message: d.message,
    ...(d.hint ? { hint: d.hint } : {}),
    path: dottedPath(d.path),
    line: pos?.line ?? null,
    column: pos?.column ?? null,
    ...(end ? { end_line: end.line, end_column: end.column } : {}),
    ...(d.related
      ? {
          related: d.related.map((r) => {
            const rp = r.range && source ? source.position(r.range[0]) : undefined;
            return { message: r.message, path: dottedPath(r.path), line: rp?.line ?? null, column: rp?.column ?? null };
          }),
        }
      : {}),
  };
}

export function summaryLine(files: number, errors: number, warnings: number, c: Colors): string {
  const e = `${errors} error${errors === 1 ? '' : 's'}`;
  const w = `${warnings} warning${warnings === 1 ? '' : 's'}`;
  return `${files} file${files === 1 ? '' : 's'} checked: ${errors > 0 ? c.red(e) : e}, ${warnings > 0 ? c.yellow(w) : w}`;
}
