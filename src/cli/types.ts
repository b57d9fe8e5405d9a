/** `baton types FILE [-o OUT] [--baton-module NAME]`: TypeScript types for a workflow's phases and a typed `defineHandlers`. */
import { writeFile } from 'node:fs/promises';
import { outputProblem } from './output.js';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadWorkflow } from '../workflow/compile.js';
import { generateTypes } from '../workflow/contract/typegen.js';
import type { CliIo } from './io.js';
import { printDiagnostics } from './validate.js';

const USAGE = 'Usage: baton types FILE [-o OUT.ts] [--baton-module NAME]\n';

export async function typesCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { output: { type: 'string', short: 'o' }, 'baton-module': { type: 'string' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (values.help) {
    io.stdout(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    io.stderr(`baton types: name one workflow file\n${USAGE}`);
    return 2;
  }
  const file = positionals[0]!;
  const why = values.output === undefined ? undefined : await outputProblem(resolve(io.cwd, values.output));
  if (why) {
    io.stderr(`baton types: -o ${values.output}: ${why}\n`);
    return 2;
  }
  const r = await loadWorkflow(resolve(io.cwd, file));
  if (!r.model) {
    io.stderr(printDiagnostics({ ...r, file }, io.isTTY, io.cwd));
    return r.diagnostics.some((d) => d.code === 'file-unreadable') ? 2 : 1;
  }
  const text = generateTypes(r.model, { source: file, ...(values['baton-module'] !== undefined ? { batonModule: values['baton-module'] } : {}) });
  if (values.output === undefined) io.stdout(text);
  else {
    try {
      await writeFile(resolve(io.cwd, values.output), text);
    } catch (e) {
      io.stderr(`baton types: cannot write ${values.output} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})\n`);
      return 2;
    }
    io.stdout(`wrote ${values.output}: ${r.model.phases.length} phase(s)\n`);
  }
  return 0;
}
