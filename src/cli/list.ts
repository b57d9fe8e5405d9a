/** `baton list [--json]`: the bundled examples, with their names and how to run them. */
import { join } from 'node:path';
import { safeText } from '../diagnostics/terminal.js';
import { loadWorkflow } from '../workflow/compile.js';
import { colorsFor } from './color.js';
import { examplesDir, listExamples } from './examples.js';
import type { CliIo } from './io.js';

export async function listCommand(_args: string[], io: CliIo): Promise<number> {
  const examples = await Promise.all(
    listExamples().map(async (name) => {
      const r = await loadWorkflow(join(examplesDir(), name, 'workflow.yaml'));
      return { name, title: r.model?.info.name ?? null, description: r.model?.info.description ?? null, phases: r.model?.phases.length ?? null, valid: r.ok };
    }),
  );
  if (io.json) {
    io.stdout(JSON.stringify(examples, null, 2) + '\n');
    return 0;
  }
  const c = colorsFor(io, 'stdout');
  if (examples.length === 0) {
    io.stdout('no bundled examples found\n');
    return 0;
  }
  io.stdout('Bundled examples (run one with `baton run NAME`):\n\n');
  for (const e of examples) {
    const title = e.title !== null ? safeText(e.title, 200) : '(invalid)';
    const desc = safeText(e.description ?? '', 500);
    io.stdout(`  ${c.bold(e.name.padEnd(24))} ${title}${e.phases !== null ? c.dim(` (${e.phases} phases)`) : ''}\n`);
    if (desc) io.stdout(`  ${' '.repeat(24)} ${c.dim(desc)}\n`);
  }
  return 0;
}
