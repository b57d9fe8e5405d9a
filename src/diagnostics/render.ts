/** Rendering diagnostics: a compiler-style text form with code frames, and the `--json` form. */
import pc from 'picocolors';
import { dottedPath } from '../core/path.js';
import type { Diagnostic } from './diagnostic.js';
import { SourceFile } from './source.js';
import { escapeControls, safeText } from './terminal.js';

/** Characters of a source line shown in a code frame: a long line is cut to a window around the column. */
export const FRAME_WIDTH = 120;
/** Longest message, hint or note printed (a name from the file may be megabytes long). */
const MAX_MESSAGE_CHARS = 1000;

export interface RenderOptions {
  color: boolean;
}

type Colors = ReturnType<typeof pc.createColors>;

/** `file:line:col: error[code]: message`, a code frame with a caret under the range, the hint. */
export function renderDiagnostic(d: Diagnostic, source: SourceFile, opts: RenderOptions): string {
  const c: Colors = pc.createColors(opts.color);
  const lines: string[] = [];
  const pos = d.range ? source.position(d.range[0]) : undefined;
  const name = escapeControls(source.name);
  const where = pos ? `${name}:${pos.line}:${pos.column}` : name;
  const sev = d.severity === 'error' ? c.red(c.bold('error')) : c.yellow(c.bold('warning'));
  lines.push(`${c.bold(where)}: ${sev}[${d.code}]: ${c.bold(safeText(d.message, MAX_MESSAGE_CHARS))}`);
  if (d.range && pos) lines.push(...frame(source, d.range, d.severity === 'error' ? c.red : c.yellow, c));
  for (const rel of d.related ?? []) {
    if (!rel.range) continue;
    const rp = source.position(rel.range[0]);
    lines.push(`  ${c.dim('note')}: ${safeText(rel.message, MAX_MESSAGE_CHARS)} at ${name}:${rp.line}:${rp.column}`);
    lines.push(...frame(source, rel.range, c.blue, c));
  }
  if (d.hint) lines.push(`  ${c.cyan('hint')}: ${safeText(d.hint, MAX_MESSAGE_CHARS)}`);
  return lines.join('\n');
}

function frame(source: SourceFile, range: readonly [number, number], paint: (s: string) => string, c: Colors): string[] {
  const start = source.position(range[0]);
  const endPos = source.position(Math.max(range[0], range[1] - 1));
  const out: string[] = [];
  const first = Math.max(1, start.line - 1);
  const width = String(start.line + 1).length;
  const lineText = source.line(start.line);
  const col0 = Math.min(start.column - 1, lineText.length);
  const [from, to] = windowOf(lineText.length, col0);
  for (let n = first; n <= start.line; n++) {
    const text = n === start.line ? lineText : source.line(n);
    // a context line is shown in the same window when it is long, else whole
    out.push(`${c.dim(`${String(n).padStart(width)} |`)} ${n === start.line || text.length > FRAME_WIDTH ? shown(text, from, to) : escapeControls(text)}`);
  }
  const len = endPos.line === start.line ? Math.max(1, endPos.column - start.column + 1) : Math.max(1, lineText.length - col0);
  const pad = shown(lineText.slice(0, col0), from, to).replace(/[^\t]/g, ' ');
  out.push(`${' '.repeat(width)} ${c.dim('|')} ${pad}${paint('^'.repeat(Math.max(1, Math.min(len, to - col0, 80))))}`);
  return out;
}

/** The [from, to) window of a line of `length` shown for a column: the whole line when it fits. */
function windowOf(length: number, col0: number): [number, number] {
  if (length <= FRAME_WIDTH) return [0, length];
  const from = Math.max(0, Math.min(col0 - Math.floor(FRAME_WIDTH / 3), length - FRAME_WIDTH));
  return [from, from + FRAME_WIDTH];
}

/** A line cut to the window (with `…` where it was cut) and escaped for the terminal. */
function shown(line: string, from: number, to: number): string {
  if (from === 0 && line.length <= to) return escapeControls(line);
  const cut = line.slice(from, Math.min(to, line.length));
  return `${from > 0 ? '…' : ''}${escapeControls(cut)}${line.length > to ? '…' : ''}`;
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
