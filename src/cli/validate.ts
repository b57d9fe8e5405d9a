/** `baton validate FILE... [--json]`: every problem of every file, compiler-style. Exit 0 valid, 1 invalid, 2 unreadable. */
import { resolve } from 'node:path';
import pc from 'picocolors';
import { SourceFile } from '../diagnostics/source.js';
import { diagnosticToJson, renderDiagnostic, summaryLine } from '../diagnostics/render.js';
import { loadWorkflow, type CompileResult } from '../workflow/compile.js';
import type { CliIo } from './io.js';

export async function validateCommand(files: string[], opts: { json: boolean }, io: CliIo): Promise<number> {
  const results: CompileResult[] = [];
  for (const f of files) results.push(await loadWorkflow(resolve(io.cwd, f)).then((r) => ({ ...r, file: f })));
  const unreadable = results.some((r) => r.diagnostics.some((d) => d.code === 'file-unreadable'));
  if (opts.json) {
    const doc = {
      files: results.map((r) => {
        const src = new SourceFile(r.file, r.text);
        return { file: r.file, valid: r.ok, diagnostics: r.diagnostics.map((d) => diagnosticToJson(d, src)) };
      }),
    };
    io.stdout(JSON.stringify(doc, null, 2) + '\n');
  } else {
    const c = pc.createColors(io.isTTY);
    let errors = 0;
    let warnings = 0;
    for (const r of results) {
      io.stdout(printDiagnostics(r, io.isTTY));
      for (const d of r.diagnostics) {
        if (d.severity === 'error') errors++;
        else warnings++;
      }
      if (r.ok) io.stdout(`${c.green('✓')} ${r.file}: valid\n`);
    }
    io.stdout(summaryLine(results.length, errors, warnings, c) + '\n');
  }
  if (unreadable) return 2;
  return results.every((r) => r.ok) ? 0 : 1;
}

export function printDiagnostics(r: CompileResult, color: boolean): string {
  const src = new SourceFile(r.file, r.text);
  return r.diagnostics.map((d) => renderDiagnostic(d, src, { color }) + '\n\n').join('');
}
