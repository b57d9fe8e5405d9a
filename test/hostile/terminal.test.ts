/**
 * Control characters from a workflow file or an agent never reach the terminal raw: diagnostics,
 * progress lines, the live table and run summaries print them as escapes.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { ProgressView } from '../../src/cli/progress.js';
import { displayWidth } from '../../src/diagnostics/width.js';

const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]/;

function capture(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: {}, out: () => out, err: () => err };
}

// YAML escapes (\e, \a, \u202E) put real control characters into names without raw bytes in the file
const HOSTILE = '"p\\e]0;pwned\\a\\e[2J\\u202Eevil"';

describe('terminal output is escaped', () => {
  test('progress lines and the live table', () => {
    let out = '';
    const v = new ProgressView(['a\x1b[2J', 'b\u202e'], { write: (s) => void (out += s), isTTY: false });
    v.onEvent({ type: 'task.failed', at: 1, phase: 'a\x1b[2J', attempt: 1, data: { reason: 'boom \x1b]0;title\x07' } });
    v.onEvent({ type: 'run.started', at: 0, data: { reason: 'wf\x1b[31m' } });
    expect(out).toContain('a\\x1B[2J');
    expect(out).not.toMatch(RAW);
    expect(v.render()).not.toMatch(RAW);
    expect(v.render()).toContain('\\u{202E}');
  });

  test('the live table measures names in terminal columns: wide names align, an emoji is never cut in half', () => {
    const names = ['a'.repeat(31) + '🚀' + 'z'.repeat(10), '調査', '📝 write', 'b', 'tab\there'];
    const v = new ProgressView(names, { write: () => undefined, isTTY: false });
    const rows = v.render().split('\n').slice(0, names.length);
    const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    for (const r of rows) expect(r).not.toMatch(LONE);
    // the state column starts at the same terminal column on every row
    const stateAt = rows.map((r) => displayWidth(r.slice(0, r.indexOf(' pending'))));
    expect(new Set(stateAt).size, rows.join('\n')).toBe(1);
    expect(rows[0]).toContain('a'.repeat(31) + '  pending'); // the emoji did not fit: cut whole
    expect(rows[1]).toContain('調査');
  });

  test('a run with hostile phase names, agent messages and agent ids', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-term-'));
    writeFileSync(
      join(dir, 'wf.yaml'),
      `openintent: "1.0"\ninfo: {name: ${HOSTILE}}\nworkflow:\n  ${HOSTILE}: {assign: x}\n  b: {assign: y, depends_on: [${HOSTILE}]}\n`,
    );
    writeFileSync(join(dir, 'agents.mjs'), `export default { x: () => { throw new Error('bad \\x1b[2J\\x1b]0;t\\x07 news'); }, y: () => ({}) };\n`);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'hostile'], io)).toBe(1);
    expect(io.out()).toMatch(/\\x1B\[2J/);
    expect(io.out() + io.err()).not.toMatch(RAW);
    // the stored run, shown and listed later, is escaped the same way
    for (const args of [['show', 'hostile'], ['show', 'hostile', '--events'], ['runs'], ['check', 'wf.yaml']]) {
      const later = capture(dir);
      await run(args, later);
      expect(later.out()).toMatch(/\\x1B\[2J|\\u\{202E\}/);
      expect(later.out() + later.err()).not.toMatch(RAW);
    }

    writeFileSync(join(dir, 'unbound.yaml'), `openintent: "1.0"\ninfo: {name: "u"}\nworkflow:\n  a: {assign: "agent\\e[2J"}\n`);
    const io2 = capture(dir);
    expect(await run(['run', 'unbound.yaml'], io2)).toBe(2);
    expect(io2.err()).toMatch(/agent\\x1B\[2J/);
    expect(io2.out() + io2.err()).not.toMatch(RAW);
  });

  test('validate: names in messages, frames and the file name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-term-'));
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "v"}\nworkflow:\n  a: {assign: x, depends_on: [${HOSTILE}]}\n`);
    const io = capture(dir);
    expect(await run(['validate', 'wf.yaml'], io)).toBe(1);
    expect(io.out()).toMatch(/unknown-dependency/);
    expect(io.out() + io.err()).not.toMatch(RAW);
  });
});
