/**
 * Diagnostics as a SARIF 2.1.0 log, for code scanning (GitHub's upload-sarif and other viewers):
 * one run whose driver lists every diagnostic code as a rule, one result per diagnostic with its
 * region (1-based lines; columns in UTF-16 code units, as `columnKind` says; end column exclusive).
 * Files under the working directory are relative URIs against `%SRCROOT%`, the working directory.
 */
import { pathToFileURL } from 'node:url';
import type { Diagnostic, Range } from './diagnostic.js';
import { RULE_IDS, RULES } from './rules.js';
import type { SourceFile } from './source.js';

export interface FileReport {
  diagnostics: readonly Diagnostic[];
  /** The source a diagnostic's range refers to; its `name` is the path as the user typed it (relative to `cwd`) or absolute. */
  source: (d: Diagnostic) => SourceFile;
}

export interface SarifOptions {
  toolName?: string;
  toolVersion: string;
  /** Absolute working directory: the base of relative URIs. */
  cwd: string;
  informationUri?: string;
}

const SRCROOT = '%SRCROOT%';

function isAbsolute(p: string): boolean {
  return p.startsWith('/') || /^[A-Za-z]:[\\/]/.test(p);
}

/** An artifact location: a relative URI against %SRCROOT%, or a file: URI for a path elsewhere. */
export function artifactLocation(name: string): { uri: string; uriBaseId?: string } {
  if (isAbsolute(name)) return { uri: pathToFileURL(name).href };
  const uri = name
    .replace(/\\/g, '/')
    .split('/')
    .map((seg) => encodeURIComponent(seg))
    .join('/');
  return { uri, uriBaseId: SRCROOT };
}

function region(source: SourceFile, range: Range): Record<string, number> {
  const start = source.position(range[0]);
  const end = source.position(Math.max(range[0], range[1]));
  return { startLine: start.line, startColumn: start.column, endLine: end.line, endColumn: Math.max(end.column, end.line === start.line ? start.column + 1 : 1) };
}

function location(source: SourceFile, range: Range | undefined): Record<string, unknown> {
  return { physicalLocation: { artifactLocation: artifactLocation(source.name), ...(range ? { region: region(source, range) } : {}) } };
}

function ruleName(code: string): string {
  return code.replace(/(^|-)([a-z0-9])/g, (_m, _d: string, c: string) => c.toUpperCase());
}

export function toSarif(reports: readonly FileReport[], opts: SarifOptions): Record<string, unknown> {
  const results: Record<string, unknown>[] = [];
  for (const r of reports) {
    for (const d of r.diagnostics) {
      const src = r.source(d);
      const related = (d.related ?? []).filter((x) => x.range !== undefined);
      results.push({
        ruleId: d.code,
        ruleIndex: RULE_IDS.indexOf(d.code),
        level: d.severity,
        message: { text: d.hint ? `${d.message}\nhint: ${d.hint}` : d.message },
        locations: [location(src, d.range)],
        ...(related.length > 0 ? { relatedLocations: related.map((x, i) => ({ id: i + 1, ...location(src, x.range), message: { text: x.message } })) } : {}),
        ...(d.error ? { properties: { error: d.error } } : {}),
      });
    }
  }
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: opts.toolName ?? 'baton',
            version: opts.toolVersion,
            ...(opts.informationUri ? { informationUri: opts.informationUri } : {}),
            rules: RULE_IDS.map((id) => ({
              id,
              name: ruleName(id),
              shortDescription: { text: RULES[id].summary },
              defaultConfiguration: { level: RULES[id].severity },
            })),
          },
        },
        originalUriBaseIds: { [SRCROOT]: { uri: pathToFileURL(opts.cwd.endsWith('/') ? opts.cwd : `${opts.cwd}/`).href } },
        columnKind: 'utf16CodeUnits',
        results,
      },
    ],
  };
}
