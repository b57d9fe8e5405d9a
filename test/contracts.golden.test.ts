/**
 * Golden diagnostics for contract files: each workflow under test/fixtures/contracts states, in
 * `# expect: CODE FILE:LINE:COL` comments, every diagnostic, in the workflow or in a contract file it
 * references (FILE relative to the workflow). Codes and positions only, never prose.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { SourceFile } from '../src/diagnostics/source.js';
import { loadWorkflow } from '../src/workflow/compile.js';

const dir = join(import.meta.dirname, 'fixtures', 'contracts');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();

describe('golden diagnostics: contract files', () => {
  for (const f of files) {
    test(f, async () => {
      const path = join(dir, f);
      const text = readFileSync(path, 'utf8');
      const expected = [...text.matchAll(/^# expect: ([a-z-]+) (\S+:\d+:\d+)$/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
      const r = await loadWorkflow(path);
      const actual = r.diagnostics
        .map((d) => {
          const file = d.file ?? path;
          const src = new SourceFile(file, d.file ? (r.sources?.get(d.file) ?? '') : r.text);
          const p = d.range ? src.position(d.range[0]) : { line: 0, column: 0 };
          return `${d.code} ${relative(dirname(path), file)}:${p.line}:${p.column}`;
        })
        .sort();
      expect(actual).toEqual(expected);
    });
  }
});
