/** `baton validate FILE... [--json]`: every problem of every file, compiler-style. Exit 0 valid, 1 invalid, 2 unreadable. */
import { relative, resolve } from 'node:path';
import pc from 'picocolors';
import { diagnosticToJson, renderDiagnostic, summaryLine } from '../diagnostics/render.js';
import { escapeControls } from '../diagnostics/terminal.js';
import { loadWorkflow, type CompileResult } from '../workflow/compile.js';
import { resolveTarget } from './examples.js';
import type { CliIo } from './io.js';
import { sourceResolver } from './sources.js';

export async function validateCommand(files: string[], opts: { json: boolean }, io: CliIo): Promise<number> {
  const results: CompileResult[] = [];
  for (const f of files) {
    // what `run` accepts: a file, a directory holding workflow.yaml, a bundled example
    const target = resolveTarget(f, io.cwd);
    const path = target?.workflow ?? resolve(io.cwd, f);
    results.push(await loadWorkflow(path).then((r) => ({ ...r, file: path === resolve(io.cwd, f) ? f : displayPath(path, io.cwd) })));
  }
  const unreadable = results.some((r) => r.diagnostics.some((d) => d.code === 'file-unreadable'));
  if (opts.json) {
    const doc = {
      files: results.map((r) => {
        const src = sourceResolver(r, io.cwd);
        return { file: r.file, valid: r.ok, diagnostics: r.diagnostics.map((d) => ({ ...diagnosticToJson(d, src(d)), ...(d.file !== undefined ? { file: src(d).name } : {}) })) };
      }),
    };
    io.stdout(JSON.stringify(doc, null, 2) + '\n');
  } else {
    const c = pc.createColors(io.isTTY);
    let errors = 0;
    let warnings = 0;
    for (const r of results) {
      io.stdout(printDiagnostics(r, io.isTTY, io.cwd));
      for (const d of r.diagnostics) {
        if (d.severity === 'error') errors++;
        else warnings++;
      }
      if (r.ok) io.stdout(`${c.green('✓')} ${escapeControls(r.file)}: valid\n`);
    }
    io.stdout(summaryLine(results.length, errors, warnings, c) + '\n');
  }
  if (unreadable) return 2;
  return results.every((r) => r.ok) ? 0 : 1;
}

export function printDiagnostics(r: CompileResult, color: boolean, cwd?: string): string {
  const src = sourceResolver(r, cwd);
  return r.diagnostics.map((d) => renderDiagnostic(d, src(d), { color }) + '\n\n').join('');
}

/** A path as the user would type it from `cwd`, or absolute when it lies elsewhere (a bundled example). */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel === '' || rel.startsWith('..') ? path : rel;
}
