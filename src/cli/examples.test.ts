import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadWorkflow } from '../workflow/compile.js';
import { declaresFiles, examplesDir, listExamples } from './examples.js';

/** The example's own code (agents modules, subprocess scripts), not its workflow, data or generated types. */
function codeOf(dir: string): string {
  let text = '';
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) text += codeOf(p);
    else if (/\.(m?[jt]s|py|sh)$/.test(name) && !name.endsWith('.types.ts')) text += readFileSync(p, 'utf8');
  }
  return text;
}

const WRITES = /\b(writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream|copyFileSync|copyFile|mkdirSync|mkdir|write_text|write_bytes)\b|open\([^)]*['"][wa]b?['"]/;

describe('bundled examples that write files', () => {
  test('every one whose code writes files declares it (AIP-16 files or a contract’s filesWritten), so that one run from an installed package is first copied out of node_modules', async () => {
    const writers: string[] = [];
    for (const name of listExamples()) {
      const dir = join(examplesDir(), name);
      if (!WRITES.test(codeOf(dir))) continue;
      writers.push(name);
      const r = await loadWorkflow(join(dir, 'workflow.yaml'));
      expect([name, r.model !== undefined && declaresFiles(r.model)]).toEqual([name, true]);
    }
    // the check above is not vacuous: paper-contracts writes through its contract's filesWritten only
    expect(writers).toEqual(expect.arrayContaining(['draft-sections', 'paper-contracts', 'release-notes']));
  });

  test('an example that writes no file runs where it lies', async () => {
    const r = await loadWorkflow(join(examplesDir(), 'research-pipeline', 'workflow.yaml'));
    expect(declaresFiles(r.model!)).toBe(false);
  });
});
