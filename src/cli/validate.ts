/**
 * `baton validate FILE|DIR|EXAMPLE... [--format F]`: every problem of every file, compiler-style. A folder
 * holding workflow.yaml is that workflow (as for run); a folder without one stands for every workflow file
 * in it (`baton validate workflows/` in CI). Exit 0 valid, 1 invalid, 2 unreadable.
 */
import type { WorkflowForm } from '../workflow/model.js';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { renderDiagnostic, summaryLine, type RenderOptions } from '../diagnostics/render.js';
import { escapeControls } from '../diagnostics/terminal.js';
import { loadWorkflow, type CompileResult } from '../workflow/compile.js';
import { colorsFor, columnsFor, useColor } from './color.js';
import { isWorkflowFolder, nearestTarget, resolveTarget, workflowFilesIn } from './examples.js';
import { printFailure } from './fail.js';
import { formatOf, printMachineFormat, type Format } from './formats.js';
import type { CliIo } from './io.js';
import { sourceResolver, validationReport } from '../api/validation.js';
import { VALIDATE_OPTIONS } from './spec.js';

export async function validateCli(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: VALIDATE_OPTIONS, allowPositionals: true });
  const format = formatOf(values);
  if (typeof format !== 'string') {
    printFailure(io, 'validate', 'usage', format.error);
    return 2;
  }
  if (positionals.length === 0) {
    printFailure(io, 'validate', 'usage', 'name at least one workflow (a file, a directory holding workflow.yaml, or a bundled example)');
    return 2;
  }
  return validateCommand(positionals, { format }, io);
}

export async function validateCommand(files: string[], opts: { format: Format }, io: CliIo): Promise<number> {
  // each argument's files, as the user would name them: what `run` accepts (a file, a directory holding
  // workflow.yaml, a bundled example), or a folder of workflow files
  const named: { path: string; file: string }[] = [];
  for (const f of files) {
    if (isWorkflowFolder(f, io.cwd)) {
      const found = workflowFilesIn(resolve(io.cwd, f));
      if (found.length === 0) {
        printFailure(io, 'validate', 'usage', `${f} holds no workflow.yaml and no workflow file (a *.yaml or *.yml with a top-level \`openintent:\` or \`workflow:\` key)`);
        return 2;
      }
      for (const path of found) named.push({ path, file: displayPath(path, io.cwd) });
      continue;
    }
    const path = resolveTarget(f, io.cwd)?.workflow ?? resolve(io.cwd, f);
    named.push({ path, file: path === resolve(io.cwd, f) ? f : displayPath(path, io.cwd) });
  }
  const results: CompileResult[] = [];
  for (const { path, file } of named) {
    const r = { ...(await loadWorkflow(path)), file };
    // a misspelt name: the file beside it that was likely meant
    const missing = r.diagnostics.find((d) => d.code === 'file-unreadable' && d.file === undefined && d.hint === undefined && d.message.endsWith(': no such file'));
    const near = missing ? nearestTarget(file, io.cwd) : undefined;
    if (missing && near !== undefined) missing.hint = `did you mean \`${near}\`?`;
    results.push(r);
  }
  const unreadable = results.some((r) => r.diagnostics.some((d) => d.code === 'file-unreadable'));
  if (opts.format === 'sarif' || opts.format === 'github') {
    await printMachineFormat(opts.format, results.map((r) => ({ diagnostics: r.diagnostics, source: sourceResolver(r, io.cwd) })), io);
  } else if (opts.format === 'json') {
    io.stdout(JSON.stringify(validationReport(results, io.cwd), null, 2) + '\n');
  } else {
    const c = colorsFor(io, 'stdout');
    let errors = 0;
    let warnings = 0;
    for (const r of results) {
      io.stdout(printDiagnostics(r, renderOptionsFor(io, 'stdout'), io.cwd));
      for (const d of r.diagnostics) {
        if (d.severity === 'error') errors++;
        else warnings++;
      }
      if (r.ok) io.stdout(`${c.green('✓')} ${escapeControls(r.file)}: valid (${formName(r.form)})\n`);
      else if (r.form !== undefined) io.stdout(`${c.red('✗')} ${escapeControls(r.file)}: invalid (${formName(r.form)})\n`);
      // not parsed as a workflow at all (a YAML syntax error, a duplicate key) or not read: a line all the same
      else io.stdout(`${c.red('✗')} ${escapeControls(r.file)}: ${r.diagnostics.some((d) => d.code === 'file-unreadable' && d.file === undefined) ? 'cannot be read' : 'invalid'}\n`);
    }
    io.stdout(summaryLine(results.length, errors, warnings, c) + '\n');
  }
  if (unreadable) return 2;
  return results.every((r) => r.ok) ? 0 : 1;
}

/** How `baton validate` names a file's form. */
export function formName(form: WorkflowForm | undefined): string {
  return form === 'steps' ? 'the contract spec’s step form: workflow.steps' : 'OpenIntent Workflow YAML 1.0';
}

export function printDiagnostics(r: CompileResult, opts: RenderOptions, cwd?: string): string {
  const src = sourceResolver(r, cwd);
  return r.diagnostics.map((d) => renderDiagnostic(d, src(d), opts) + '\n\n').join('');
}

/** How diagnostics going to `stream` are rendered: its colour and its width. */
export function renderOptionsFor(io: CliIo, stream: 'stdout' | 'stderr'): RenderOptions {
  const width = columnsFor(io, stream);
  return { color: useColor(io, stream), ...(width !== undefined ? { width } : {}) };
}

/**
 * The one workflow `check` and `types` read for FILE|DIR|EXAMPLE, as `run` resolves it (else the path
 * itself: its read error is the diagnostic), and its name as the user would type it; undefined for a folder
 * that holds no workflow.yaml (one of several workflow files: the caller says to name one).
 */
export function oneWorkflow(arg: string, cwd: string): { path: string; shown: string } | undefined {
  if (isWorkflowFolder(arg, cwd)) return undefined;
  const path = resolveTarget(arg, cwd)?.workflow ?? resolve(cwd, arg);
  return { path, shown: path === resolve(cwd, arg) ? arg : displayPath(path, cwd) };
}

/** What `check` and `types` say of a folder of workflow files. */
export function folderRefusal(arg: string): string {
  return `${arg} holds no workflow.yaml: name one workflow (\`baton validate ${arg}\` validates every workflow file in it)`;
}

/** A path as the user would type it from `cwd`, or absolute when it lies elsewhere (a bundled example). */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel === '' || rel.startsWith('..') ? path : rel;
}
