/**
 * What `baton validate --json` prints and `POST /workflows/validate` answers: one document, built here
 * for both edges so that they cannot drift. A contract file a diagnostic points into is named relative
 * to the working directory (the CLI's, or the server's), as the user would type it.
 */
import { relative } from 'node:path';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { diagnosticToJson, type JsonDiagnostic } from '../diagnostics/render.js';
import { SourceFile } from '../diagnostics/source.js';
import type { CompileResult } from '../workflow/compile.js';
import type { WorkflowForm } from '../workflow/model.js';

/** One file of the document: `form` is there once the file is known as a workflow of either form. */
export interface ValidatedFile {
  file: string;
  valid: boolean;
  form?: WorkflowForm;
  diagnostics: JsonDiagnostic[];
}

export interface ValidationReport {
  files: ValidatedFile[];
}

/** The document for compiled files (each `file` as it should be shown). */
export function validationReport(results: readonly CompileResult[], cwd: string): ValidationReport {
  return { files: results.map((r) => validatedFile(r, cwd)) };
}

export function validatedFile(r: CompileResult, cwd: string): ValidatedFile {
  return { file: r.file, valid: r.ok, ...(r.form !== undefined ? { form: r.form } : {}), diagnostics: jsonDiagnostics(r, cwd) };
}

/** A result's diagnostics as JSON (`file` added for those in another file, a contract). */
export function jsonDiagnostics(r: CompileResult, cwd: string): JsonDiagnostic[] {
  const src = sourceResolver(r, cwd);
  return r.diagnostics.map((d) => ({ ...diagnosticToJson(d, src(d)), ...(d.file !== undefined ? { file: src(d).name } : {}) }));
}

/**
 * The source a diagnostic's range refers to: the workflow itself, or a contract file it read
 * (`d.file`, text in `r.sources`), named relative to `cwd`.
 */
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
