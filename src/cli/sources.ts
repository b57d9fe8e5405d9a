/**
 * The source a diagnostic's range refers to: the workflow itself, or a contract file it read
 * (`d.file`, text in `r.sources`), named relative to the working directory as the user would type it.
 */
import { relative } from 'node:path';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { SourceFile } from '../diagnostics/source.js';
import type { CompileResult } from '../workflow/compile.js';

export function sourceResolver(r: CompileResult, cwd = process.cwd()): (d: Diagnostic) => SourceFile {
  const main = new SourceFile(r.file, r.text);
  const others = new Map<string, SourceFile>();
  return (d) => {
    if (d.file === undefined) return main;
    let s = others.get(d.file);
    if (!s) others.set(d.file, (s = new SourceFile(relative(cwd, d.file) || d.file, r.sources?.get(d.file) ?? '')));
    return s;
  };
}
