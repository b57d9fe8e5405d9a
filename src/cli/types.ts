/** `baton types FILE|DIR|EXAMPLE [-o OUT] [--baton-module NAME] [--json]`: TypeScript types for a workflow's phases and a typed `defineHandlers`. */
import { writeFile } from 'node:fs/promises';
import { outputProblem } from './output.js';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadWorkflow } from '../workflow/compile.js';
import { generateTypes } from '../workflow/contract/typegen.js';
import type { CliIo } from './io.js';
import { printFailure } from './fail.js';
import { usageLine } from './help.js';
import { TYPES_OPTIONS, commandSpec } from './spec.js';
import { jsonDiagnostics } from '../api/validation.js';
import { folderRefusal, oneWorkflow, printDiagnostics, renderOptionsFor } from './validate.js';

export async function typesCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: TYPES_OPTIONS, allowPositionals: true });
  if (positionals.length !== 1) {
    printFailure(io, 'types', 'usage', 'name one workflow: a file, a directory holding workflow.yaml or a bundled example');
    io.stderr(usageLine(commandSpec('types')!));
    return 2;
  }
  const named = oneWorkflow(positionals[0]!, io.cwd);
  if (!named) {
    printFailure(io, 'types', 'usage', folderRefusal(positionals[0]!));
    return 2;
  }
  const file = named.shown;
  const why = values.output === undefined ? undefined : await outputProblem(resolve(io.cwd, values.output), join(values.output, 'workflow.types.ts'));
  if (why) {
    printFailure(io, 'types', 'usage', `-o ${values.output}: ${why}`);
    return 2;
  }
  const r = await loadWorkflow(named.path);
  if (!r.model) {
    io.stderr(printDiagnostics({ ...r, file }, renderOptionsFor(io, 'stderr'), io.cwd));
    const unreadable = r.diagnostics.some((d) => d.code === 'file-unreadable');
    if (io.json) printFailure(io, 'types', unreadable ? 'file-unreadable' : 'invalid-workflow', `${file}: the workflow is invalid; no types were written`, { diagnostics: jsonDiagnostics({ ...r, file }, io.cwd) });
    return unreadable ? 2 : 1;
  }
  // the header names the workflow as it was given (a bundled example by its name, not its place in node_modules)
  const text = generateTypes(r.model, { source: positionals[0]!, ...(values['baton-module'] !== undefined ? { batonModule: values['baton-module'] } : {}) });
  const phases = r.model.phases.length;
  if (values.output === undefined) io.stdout(values.json ? JSON.stringify({ file, phases, types: text }, null, 2) + '\n' : text);
  else {
    try {
      await writeFile(resolve(io.cwd, values.output), text);
    } catch (e) {
      printFailure(io, 'types', 'usage', `cannot write ${values.output}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      return 2;
    }
    io.stdout(values.json ? JSON.stringify({ file, phases, wrote: values.output }, null, 2) + '\n' : `wrote ${values.output}: ${phases} phase(s)\n`);
  }
  return 0;
}
