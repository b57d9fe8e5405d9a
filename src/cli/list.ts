/** `baton list`: the bundled examples, with their names and how to run them. */
import { join } from 'node:path';
import pc from 'picocolors';
import { safeText } from '../diagnostics/terminal.js';
import { loadWorkflow } from '../workflow/compile.js';
import { examplesDir, listExamples } from './examples.js';
import type { CliIo } from './io.js';

export async function listCommand(_args: string[], io: CliIo): Promise<number> {
  const c = pc.createColors(io.isTTY);
  const names = listExamples();
  if (names.length === 0) {
    io.stdout('no bundled examples found\n');
    return 0;
  }
  io.stdout('Bundled examples (run one with `baton run NAME`):\n\n');
  for (const name of names) {
    const r = await loadWorkflow(join(examplesDir(), name, 'workflow.yaml'));
    const title = r.model ? safeText(r.model.info.name, 200) : '(invalid)';
    const desc = safeText(r.model?.info.description ?? '', 500);
    const phases = r.model ? `${r.model.phases.length} phases` : '';
    io.stdout(`  ${c.bold(name.padEnd(24))} ${title}${phases ? c.dim(` (${phases})`) : ''}\n`);
    if (desc) io.stdout(`  ${' '.repeat(24)} ${c.dim(desc)}\n`);
  }
  return 0;
}
