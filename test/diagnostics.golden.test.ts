/**
 * Golden diagnostics: each fixture states, in `# expect: CODE LINE:COL` comments, every diagnostic the
 * compiler must report for it. Codes and positions are asserted, never prose. Together the fixtures
 * cover every code of the closed list (checked below).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { DIAGNOSTIC_CODES } from '../src/core/codes.js';
import { SourceFile } from '../src/diagnostics/source.js';
import { loadWorkflow } from '../src/workflow/compile.js';

const dir = join(import.meta.dirname, 'fixtures', 'diagnostics');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();

function expectations(text: string): string[] {
  return [...text.matchAll(/^# expect: ([a-z0-9-]+) (\d+:\d+)$/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
}

/** Through loadWorkflow: the fixtures are bytes (not-utf8.yaml is Latin-1). */
async function actual(file: string): Promise<string[]> {
  const r = await loadWorkflow(join(dir, file));
  const src = new SourceFile(file, r.text);
  return r.diagnostics
    .map((d) => {
      const p = d.range ? src.position(d.range[0]) : { line: 0, column: 0 };
      return `${d.code} ${p.line}:${p.column}`;
    })
    .sort();
}

describe('golden diagnostics', () => {
  for (const f of files) {
    test(f, async () => {
      const text = readFileSync(join(dir, f), 'latin1'); // the expectations are ASCII
      expect(await actual(f)).toEqual(expectations(text));
    });
  }

  test('every diagnostic code has a fixture', () => {
    const covered = new Set<string>();
    for (const f of files) for (const e of expectations(readFileSync(join(dir, f), 'latin1'))) covered.add(e.split(' ')[0]!);
    // the a2a-* codes need a live agent card: test/server/a2a-check.test.ts covers them
    const missing = DIAGNOSTIC_CODES.filter((c) => c !== 'file-unreadable' && !c.startsWith('a2a-') && !covered.has(c));
    expect(missing).toEqual([]);
  });
});
