/**
 * Messages that say what is wrong in the user's terms: a negative number for a numeric option, a
 * YAML file with two documents, who decided a gate when USER is unset, a word that is not one of an
 * escalation's choices. (An MCP server that dies at start: src/agents/llm/transport.test.ts.)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { until } from '../helpers/spawn.js';

const STACK = /\n\s+at .+:\d+:\d+/;

function capture(cwd: string, env: Record<string, string> = { USER: 'tester' }): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env, out: () => out, err: () => err };
}

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'baton-msg-'));
  writeFileSync(join(d, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: "M"}\nworkflow:\n  a: {assign: x}\n');
  return d;
}

describe('negative numbers for numeric options', () => {
  it.each([
    [['run', 'wf.yaml', '--stub-agents', '--concurrency', '-3'], '--concurrency'],
    [['run', 'wf.yaml', '--stub-agents', '--timeout', '-1'], '--timeout'],
    [['runs', '--limit', '-2'], '--limit'],
    [['worker', '--lease', '-1'], '--lease'],
    [['resume', 'r1', '--concurrency', '-1'], '--concurrency'],
  ])('%j: one line naming the option and the value (exit 2)', async (args, flag) => {
    const io = capture(dir());
    expect(await run(args, io)).toBe(2);
    const first = io.err().split('\n')[0]!;
    expect(first).toContain(flag);
    expect(first).toMatch(/positive/);
    expect(io.err()).not.toContain('\\n'); // no escaped line break
    expect(io.err()).not.toMatch(STACK);
  });
});

describe('a YAML file with more than one document', () => {
  it.each([
    ['small (every error, from yaml)', ''],
    ['large (the first error, from js-yaml)', `# ${'x'.repeat(70_000)}\n`],
  ])('%s: yaml-syntax at the second `---`, in a user\'s words', async (_, pad) => {
    const d = dir();
    writeFileSync(join(d, 'multi.yaml'), `${pad}openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: x}\n---\nfoo: 1\n`);
    const io = capture(d);
    expect(await run(['validate', 'multi.yaml', '--json'], io)).toBe(1);
    const diags = (JSON.parse(io.out()) as { files: { diagnostics: { code: string; line: number; message: string }[] }[] }).files[0]!.diagnostics;
    expect(diags.map((x) => x.code)).toEqual(['yaml-syntax']);
    expect(diags[0]!.line).toBe(pad ? 6 : 5);
    expect(diags[0]!.message).toMatch(/single YAML document/);
    expect(diags[0]!.message).not.toMatch(/parseAllDocuments|YAML\./);
  });
});

const ESCALATING = `openintent: "1.0"
info: {name: "Escalating"}
agents:
  drafter:
    x-contract:
      errorHandling: {onAgentFailure: {action: escalate_to_user}}
workflow:
  draft: {assign: drafter, outputs: {draft: string}}
`;

describe('gates', () => {
  it('who decided, when USER and LOGNAME are unset: the account name, never "unknown"', async () => {
    const d = dir();
    writeFileSync(join(d, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: "G"}\nworkflow:\n  a: {assign: x, x-require_approval: true}\n');
    expect(await run(['run', 'wf.yaml', '--stub-agents', '--run-id', 'u1', '--detach'], capture(d))).toBe(0);
    const io = capture(d, {});
    expect(await run(['approve', 'u1', 'approve-a'], io)).toBe(0);
    expect(io.out()).not.toMatch(/unknown/);
    expect(io.out()).toContain(`approved by ${userInfo().username}`);
  });

  it('respond --value maybe to an escalation lists retry, skip and fail (exit 2); retry then finishes the run', async () => {
    const d = dir();
    writeFileSync(join(d, 'wf.yaml'), ESCALATING);
    writeFileSync(join(d, 'agents.mjs'), "export default { drafter: (ctx) => { if (ctx.attempt === 1) throw Object.assign(new Error('down'), { code: 'Down', retryable: false }); return { draft: 'ok' }; } };\n");
    const first = capture(d);
    const done = run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'e1'], first);
    await until(() => /baton respond e1 escalate-draft-1/.test(first.err()));
    for (const word of ['maybe', 'later']) {
      const io = capture(d);
      expect(await run(['respond', 'e1', 'escalate-draft-1', '--value', word], io)).toBe(2);
      expect(io.err()).toMatch(new RegExp(`--value ${word}: gate escalate-draft-1 takes one of retry, skip, fail`));
      expect(io.err()).not.toMatch(/JSON/);
    }
    expect(await run(['respond', 'e1', 'escalate-draft-1', '--value', 'retry'], capture(d))).toBe(0);
    expect(await done).toBe(0);
  });

  it('respond --value WORD to an approval gate says to approve or deny it, not that WORD is not JSON; an empty --as is refused', async () => {
    const d = dir();
    writeFileSync(join(d, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: "G"}\nworkflow:\n  a: {assign: x, x-require_approval: true}\n');
    expect(await run(['run', 'wf.yaml', '--stub-agents', '--run-id', 'r1', '--detach'], capture(d))).toBe(0);
    for (const value of ['yes', '"yes"']) {
      const io = capture(d);
      await run(['respond', 'r1', 'approve-a', '--value', value, '--json'], io);
      expect((JSON.parse(io.out()) as { error: { code: string } }).error.code, value).toBe('gate-refused');
    }
    // an empty --as is refused, not replaced by the login user; the gate stays open
    for (const cmd of ['approve', 'deny']) {
      const empty = capture(d);
      expect(await run([cmd, 'r1', 'approve-a', '--as', ' ', '--json'], empty)).toBe(2);
      expect((JSON.parse(empty.out()) as { error: { code: string } }).error.code).toBe('usage');
    }
    // a gate the run does not have is named as such
    const io = capture(d);
    expect(await run(['respond', 'r1', 'nope', '--value', 'yes', '--json'], io)).toBe(2);
    expect((JSON.parse(io.out()) as { error: { code: string } }).error.code).toBe('unknown-gate');
  });
});
