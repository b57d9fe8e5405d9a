/**
 * Diagnostics as GitHub Actions workflow commands, one line each, which the runner turns into
 * annotations on the pull request:
 * `::error file=F,line=L,col=C,endLine=L,endColumn=C,title=CODE::message`. Escaped as the Actions
 * toolkit does: `%`, CR and LF in the message; those and `,` and `:` in properties. Columns are
 * 1-based and the end column inclusive; an end column is given only on a one-line range (GitHub
 * ignores columns across lines).
 */
import type { Diagnostic } from './diagnostic.js';
import type { FileReport } from './sarif.js';

export function escapeData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

export function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

export function githubAnnotation(d: Diagnostic, report: FileReport): string {
  const src = report.source(d);
  const props: [string, string | number][] = [['file', src.name.replace(/\\/g, '/')]];
  if (d.range) {
    const start = src.position(d.range[0]);
    const end = src.position(Math.max(d.range[0], d.range[1] - 1));
    props.push(['line', start.line], ['col', start.column], ['endLine', end.line]);
    if (end.line === start.line) props.push(['endColumn', end.column]);
  }
  props.push(['title', d.code]);
  const text = d.hint ? `${d.message}\nhint: ${d.hint}` : d.message;
  return `::${d.severity} ${props.map(([k, v]) => `${k}=${escapeProperty(String(v))}`).join(',')}::${escapeData(text)}`;
}

export function toGithub(reports: readonly FileReport[]): string {
  return reports.flatMap((r) => r.diagnostics.map((d) => githubAnnotation(d, r) + '\n')).join('');
}
