/** defineAgent end to end: run by the engine, files staged (AIP-16), loaded from an --agents module. */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { contractOfHandler, defineAgent, defineIO } from '../src/agents/define.js';
import { runWorkflow } from '../src/api/run.js';
import type { AgentContext } from '../src/engine/agent.js';
import { WorkflowSpec } from '../src/api/spec.js';
import { loadAgentsModule } from '../src/cli/agents-module.js';

describe('defineAgent', () => {
  const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: define}
workflow:
  draft:
    assign: drafter
    inputs: {topic: $trigger.topic}
    outputs: {draft: string}
`);

  test('its errorHandling and estimatedTime steer the run as a contract file does', async () => {
    const seen: unknown[] = [];
    const drafter = defineAgent({
      id: 'drafter',
      version: '1.0.0',
      resources: { estimatedTime: '300ms' },
      // a JavaScript caller may leave out requiresFlags and maxRetries: the contract file defaults apply
      errorHandling: { onPartialCompletion: { action: 'return_partial' }, onTimeout: { action: 'checkpoint_and_retry' } },
      handler: async (ctx) => {
        seen.push(ctx.lastCheckpoint);
        if (ctx.attempt === 1) {
          await ctx.checkpoint({ half: true });
          await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
        }
        return { draft: 'half of it', completionStatus: 'partial' };
      },
    });
    expect(drafter.contract.resources.estimatedMs).toEqual({ min: 300, max: 300 });
    const r = await runWorkflow(spec, { agents: { drafter }, trigger: { topic: 'tides' } });
    expect(r.phases['draft']).toMatchObject({ status: 'partial', attempts: 2, output: { draft: 'half of it' } });
    expect(seen).toEqual([undefined, { half: true }]);
    expect(r.events.find((e) => e.type === 'task.attempt_failed')).toMatchObject({ failure: { code: 'Timeout', details: { timeout_ms: 300 } } });
  });

  test('a handler function carrying its contract; runs with parsed input, output checked', async () => {
    const drafter = defineAgent({
      id: 'drafter',
      version: '1.0.0',
      io: defineIO({ inputs: z.object({ topic: z.string().trim() }), outputs: z.object({ draft: z.string() }), outputsFiles: { draft: { path: 'out/draft.md' } } }),
      sideEffects: { filesRead: ['notes/*.md'] },
      handler: (ctx) => ({ draft: `<${ctx.input.topic}>` }),
    });
    expect(typeof drafter).toBe('function');
    expect(contractOfHandler(drafter)).toMatchObject({ agentId: 'drafter', origin: { kind: 'typescript' } });
    expect(drafter.contract.sideEffects.filesWritten.map((f) => f.path)).toEqual(['out/draft.md']);
    expect(drafter.contract.sideEffects.filesRead.map((f) => f.path)).toEqual(['notes/*.md']);
    const r = await runWorkflow(spec, { agents: { drafter }, trigger: { topic: '  tides ' } });
    expect(r.phases['draft']?.error).toBeUndefined();
    expect(r.phases['draft']?.output).toEqual({ draft: '<tides>' });
  });

  test('a returned `_cost` is spend, not an output: a closed or stripping output schema neither refuses nor drops it', async () => {
    const stripping = defineAgent({ id: 'drafter', version: '1.0.0', io: defineIO({ outputs: z.object({ draft: z.string() }) }), handler: () => ({ draft: 'x', _cost: 0.25 }) });
    const closed = { type: 'object', required: ['draft'], properties: { draft: { type: 'string' } }, additionalProperties: false };
    const closedAgent = defineAgent({ id: 'drafter', version: '1.0.0', io: defineIO({ outputs: closed }), handler: () => ({ draft: 'x', _cost: 0.25 }) });
    for (const drafter of [stripping, closedAgent]) {
      const r = await runWorkflow(spec, { agents: { drafter }, trigger: { topic: 'tides' } });
      expect(r.phases['draft']).toMatchObject({ status: 'completed', output: { draft: 'x' }, cost_usd: 0.25 });
    }
  });

  test('invalid input: rejected with the contract message template, not retried', async () => {
    const drafter = defineAgent({
      id: 'drafter',
      version: '1.0.0',
      io: defineIO({ inputs: { type: 'object', properties: { topic: { type: 'string', minLength: 3 } } } }),
      errorHandling: { onInputValidationFailure: { action: 'reject', message: 'Invalid input: {validationErrors}' } },
      handler: () => ({ draft: 'x' }),
    });
    const r = await runWorkflow(spec, { agents: { drafter }, trigger: { topic: 'ab' } });
    expect(r.phases['draft']?.status).toBe('failed');
    expect(r.phases['draft']?.error).toMatchObject({ code: 'InputValidationError' });
    expect(r.phases['draft']?.error?.message).toMatch(/^Invalid input: \$\.topic: /);
    expect(r.phases['draft']?.attempts).toBe(1);
  });

  test('AIP-16 files: staged into a scratch root injected as _workflowFsRoot, outputs synced back with tokens', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'baton-define-'));
    writeFileSync(join(ws, 'notes.md'), 'tides and moons');
    const drafter = defineAgent({
      id: 'drafter',
      version: '1.0.0',
      workspace: ws,
      io: defineIO({ inputs: z.object({ topic: z.string(), _workflowFsRoot: z.string() }), inputsFiles: { notes: { path: 'notes.md' } }, outputsFiles: { draft: { path: 'out/<runId>.md' } } }),
      handler: async (ctx) => {
        const root = ctx.input._workflowFsRoot;
        const notes = await readFile(join(root, 'notes'), 'utf8');
        await writeFile(join(root, 'draft'), `${ctx.input.topic}: ${notes}`);
        return { draft: 'written' };
      },
    });
    const events: { type: string; data?: unknown }[] = [];
    const r = await runWorkflow(spec, { agents: { drafter }, trigger: { topic: 'sea' }, runId: 'run-files', onEvent: (e) => void events.push(e as never) });
    expect(r.phases['draft']?.output).toEqual({ draft: 'written' });
    expect(readFileSync(join(ws, 'out', 'run-files.md'), 'utf8')).toBe('sea: tides and moons');
    // staged and synced by the engine (engine/files.ts), recorded as task.file provenance
    const files = events.filter((e) => e.type === 'task.file') as unknown as { direction: string; key: string; path: string; sha256: string; size: number }[];
    expect(files.map((f) => `${f.direction} ${f.key} ${f.path} ${f.size}`)).toEqual(['staged notes notes.md 15', 'synced draft out/run-files.md 20']);
    expect(files.every((f) => /^[0-9a-f]{64}$/.test(f.sha256))).toBe(true);
    const missing = defineAgent({ id: 'm', version: '1.0.0', workspace: ws, io: defineIO({ inputsFiles: { x: { path: 'nope.md' } } }), handler: () => ({ draft: 'x' }) });
    const r2 = await runWorkflow(spec, { agents: { drafter: missing }, trigger: { topic: 'sea' } });
    expect(r2.phases['draft']?.error).toMatchObject({ code: 'MissingInputFile' });
  });

  test('called outside an engine, its files stay in the workspace: `..`, absolute paths, symbolic links out and a `<runId>` of `..` are refused', async () => {
    const base = mkdtempSync(join(tmpdir(), 'baton-define-escape-'));
    const ws = join(base, 'ws');
    mkdirSync(ws);
    writeFileSync(join(base, 'secret.txt'), 'secret');
    writeFileSync(join(ws, 'ok.md'), 'ok');
    symlinkSync(join(base, 'secret.txt'), join(ws, 'link.md'));
    const logs: string[] = [];
    const records: [string, unknown][] = [];
    const ctx = (runId: string) =>
      ({ runId, phase: 'p', attempt: 1, agent: 'x', input: {}, signal: new AbortController().signal, log: (m: string) => void logs.push(m), record: (k: string, d: unknown) => void records.push([k, d]) }) as unknown as AgentContext;
    const reading = (path: string) => defineAgent({ id: 'r', version: '1.0.0', workspace: ws, io: defineIO({ inputsFiles: { src: { path } } }), handler: () => ({ done: true }) });
    for (const path of ['../secret.txt', join(base, 'secret.txt'), 'link.md']) {
      await expect(reading(path)(ctx('run-1'))).rejects.toMatchObject({ code: 'PathEscape' });
    }
    await expect(reading('ok.md')(ctx('run-1'))).resolves.toEqual({ done: true });
    // a caller's own context may lack the run's fields (JavaScript): still staged
    await expect(reading('ok.md')({ input: {}, log: () => undefined, record: () => undefined } as unknown as AgentContext)).resolves.toEqual({ done: true });
    expect(records).toEqual([['file_read', expect.objectContaining({ key: 'src', path: 'ok.md', size: 2 })]]);
    // outputs: refused ones are logged and never written; the call keeps its result (AIP-16)
    const writing = defineAgent({
      id: 'w',
      version: '1.0.0',
      workspace: ws,
      io: defineIO({ outputsFiles: { up: { path: '../pwned.txt' }, abs: { path: join(base, 'abs.txt') }, run: { path: '<runId>/x.txt' }, good: { path: 'out/<runId>.txt' } } }),
      handler: async (c) => {
        const root = (c.input as { _workflowFsRoot: string })._workflowFsRoot;
        for (const k of ['up', 'abs', 'run', 'good']) await writeFile(join(root, k), k);
        return { done: true };
      },
    });
    await expect(writing(ctx('..'))).resolves.toEqual({ done: true });
    expect(existsSync(join(base, 'pwned.txt'))).toBe(false);
    expect(existsSync(join(base, 'abs.txt'))).toBe(false);
    expect(existsSync(join(base, 'x.txt'))).toBe(false);
    // `out/<runId>.txt` with a run id of `..` is `out/...txt`, a plain file name: written
    expect(logs.filter((l) => /could not be synced/.test(l)).map((l) => /`(\w+)`/.exec(l)![1])).toEqual(['up', 'abs', 'run']);
    await expect(writing(ctx('run-2'))).resolves.toEqual({ done: true });
    expect(readFileSync(join(ws, 'out', 'run-2.txt'), 'utf8')).toBe('good');
    expect(existsSync(join(base, 'pwned.txt'))).toBe(false);
  });

  test('an --agents module exporting {drafter: defineAgent(...)} is still a handler map', async () => {
    const handlers = await loadAgentsModule(join(import.meta.dirname, 'fixtures', 'define', 'agents.ts'), process.cwd());
    expect(Object.keys(handlers)).toEqual(['drafter']);
    expect(contractOfHandler(handlers['drafter'])?.input?.schema).toMatchObject({ required: ['topic'] });
  });
});
