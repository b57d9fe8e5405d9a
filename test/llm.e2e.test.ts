/** LLM agents through the whole stack: runWorkflow (engine, retry policy, outputs) and the CLI. */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine } from '../src/api/engine.js';
import { runWorkflow } from '../src/api/run.js';
import type { AgentHandler } from '../src/engine/agent.js';
import { WorkflowSpec } from '../src/api/spec.js';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import type { RunEvent } from '../src/engine/events.js';
import { MemoryStore } from '../src/store/memory.js';
import { loadWorkflow, parseWorkflow } from '../src/workflow/compile.js';

const root = join(import.meta.dirname, '..');
const example = join(root, 'examples', 'llm-review');

function tmp(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-llm-'));
  for (const [f, t] of Object.entries(files)) writeFileSync(join(dir, f), t);
  return dir;
}

describe('runWorkflow with LLM agents', () => {
  test('the llm-review example runs offline: typed data reaches the function agent', async () => {
    const compiled = await loadWorkflow(join(example, 'workflow.yaml'));
    expect(compiled.diagnostics).toEqual([]);
    const events: RunEvent[] = [];
    const agents = ((await import(join(example, 'agents.mjs'))) as { default: Record<string, AgentHandler> }).default;
    const r = await runWorkflow(WorkflowSpec.fromResult(compiled), { agents, cwd: example, trigger: { path: 'cart.ts' }, llm: { env: {} }, onEvent: (e) => events.push(e) });
    expect(r.status).toBe('completed');
    expect(r.phases['review']!.output!['findings']).toHaveLength(2);
    expect(r.phases['triage']!.output).toMatchObject({ decision: 'request_changes', blocking: 1 });
    expect(String(r.phases['report']!.output!['report'])).toContain('line 8 [high]');
    const kinds = events.flatMap((e) => (e.type === 'task.agent_event' ? [`${e.phase}:${e.kind}`] : []));
    expect(kinds).toEqual(expect.arrayContaining(['review:tool_call', 'review:output_reprompt', 'review:llm_call', 'triage:json_repair', 'triage:result']));
  });

  test('invalid twice fails the attempt; the phase retry policy runs a fresh conversation; nothing invalid is recorded', async () => {
    const dir = tmp({
      'replies.yaml': `
phases:
  rate:
    - '{"score": "ten"}'
    - '{"score": "still ten"}'
    - 'Final answer: {"score": 10}'
`,
    });
    const wf = parseWorkflow(
      `
openintent: "1.0"
info: {name: retries}
llm: {provider: scripted, x-replies: replies.yaml}
agents:
  rater: {output_schema: {type: object, required: [score], properties: {score: {type: integer}}}}
workflow:
  rate:
    assign: rater
    retry: {max_attempts: 2, initial_delay_ms: 0}
    outputs: {score: integer}
`,
      { file: join(dir, 'workflow.yaml') },
    );
    const events: RunEvent[] = [];
    const r = await runWorkflow(wf.model!, { cwd: dir, llm: { env: {}, prices: { scripted: { inputPerMTok: 1, outputPerMTok: 1 } } }, onEvent: (e) => events.push(e) });
    expect(r.status).toBe('completed');
    expect(r.phases['rate']!.output).toEqual({ score: 10 });
    // every call's cost reaches the run's total, the failed attempt's included
    const calls = events.flatMap((e) => (e.type === 'task.agent_event' && e.kind === 'llm_call' ? [e.data['cost_usd'] as number] : []));
    expect(calls).toHaveLength(3);
    expect(r.cost_usd).toBeCloseTo(calls.reduce((a, b) => a + b, 0), 12);
    const failed = events.find((e) => e.type === 'task.attempt_failed');
    expect(failed && failed.type === 'task.attempt_failed' && failed.failure.code).toBe('output_schema_validation_failed');
    expect(failed && failed.type === 'task.attempt_failed' && failed.failure.details?.['validation_errors']).toEqual([`$.score: 'still ten' is not of type 'integer'`]);
  });

  test('a phase budget stops a call before it is made', async () => {
    const dir = tmp({ 'replies.yaml': `phases:\n  write: ['{"text": "hi"}']\n` });
    const wf = parseWorkflow(
      `
openintent: "1.0"
info: {name: budget}
llm: {provider: scripted, x-replies: replies.yaml, model: priced, max_tokens: 4000}
agents:
  w: {system_prompt: "Write."}
workflow:
  write:
    assign: w
    cost_tracking: {enabled: true, budget_usd: 0.01}
    outputs: {text: string}
`,
      { file: join(dir, 'workflow.yaml') },
    );
    const events: RunEvent[] = [];
    // 4000 tokens out at $10 per Mtok is $0.04: more than the phase's $0.01
    const r = await runWorkflow(wf.model!, { cwd: dir, llm: { env: {}, prices: { priced: { inputPerMTok: 1, outputPerMTok: 10 } } }, onEvent: (e) => events.push(e) });
    expect(r.phases['write']!.error).toMatchObject({ code: 'llm_budget_exceeded', retryable: false });
    expect(events.some((e) => e.type === 'task.agent_event' && e.kind === 'llm_call')).toBe(false);
    expect(r.cost_usd).toBe(0);
  });

  test('a missing key fails the phase with llm_missing_key (not retried), not the run start', async () => {
    const wf = parseWorkflow(`
openintent: "1.0"
info: {name: keys}
llm: {provider: openai}
agents:
  w: {system_prompt: "Write."}
workflow:
  write: {assign: w, outputs: {text: string}}
`);
    const r = await runWorkflow(wf.model!, { llm: { env: {} } });
    expect(r.status).toBe('failed');
    expect(r.phases['write']!.error).toMatchObject({ code: 'llm_missing_key', retryable: false });
  });

  test('a subprocess agent returning result_text gets the same extraction, repair and validation', async () => {
    const script = join(root, 'test', 'fixtures', 'llm', 'raw-reply.mjs');
    const text = (_mode: string): string => `
openintent: "1.0"
info: {name: raw}
agents:
  scorer: {x-command: [node, ${JSON.stringify(script)}]}
workflow:
  score:
    assign: scorer
    inputs: {mode: $trigger.mode}
    retry: {max_attempts: 1}
    outputs: {score: integer, label: string}
`;
    const ok = await runWorkflow(parseWorkflow(text('good')).model!, { trigger: { mode: 'good' } });
    expect(ok.status).toBe('completed');
    expect(ok.phases['score']!.output).toEqual({ score: 9, label: 'good' });
    const bad = await runWorkflow(parseWorkflow(text('bad')).model!, { trigger: { mode: 'bad' } });
    expect(bad.phases['score']!.error).toMatchObject({ code: 'output_schema_validation_failed' });
  });
});

describe('a raw reply to a single string output', () => {
  test('a subprocess agent whose result_text is a JSON object of the output key gives that string, not the JSON text', async () => {
    const script = 'process.stdout.write(JSON.stringify({result_text: JSON.stringify({note: "all good"})}))';
    const wf = parseWorkflow(`
openintent: "1.0"
info: {name: raw-note}
agents:
  w: {x-command: [${JSON.stringify(process.execPath)}, "-e", ${JSON.stringify(script)}]}
workflow:
  write: {assign: w, outputs: {note: string}}
`);
    const r = await runWorkflow(wf.model!);
    expect(r.phases['write']!.output).toEqual({ note: 'all good' });
  });
});

describe('--llm-agents on the corpus', () => {
  const corpus = join(root, 'test', 'fixtures', 'corpus');
  // mcp_workflow.yaml is left out: its servers are `npx -y ...` packages (network); MCP has its own tests
  const files = readdirSync(corpus).filter((f) => f.endsWith('.yaml') && f !== 'mcp_workflow.yaml');
  for (const f of files) {
    test(`every output enforced on a (scripted) model: ${f}`, async () => {
      const r = await loadWorkflow(join(corpus, f));
      const model = r.model!;
      const phases: Record<string, string[]> = {};
      const trigger: Record<string, string> = {};
      const initialState: Record<string, string> = {};
      for (const p of model.phases) {
        const sample = p.outputType?.sample();
        // a reply in prose around a fenced block, as models write them
        phases[p.name] = [sample === undefined ? 'Done.' : typeof sample === 'string' && p.outputs?.length === 1 ? sample : `Here it is:\n\`\`\`json\n${JSON.stringify(sample, null, 2)}\n\`\`\``];
        for (const b of p.inputs ?? []) {
          if (b.source.kind === 'trigger') trigger[b.source.key] = 'sample';
          if (b.source.kind === 'initial_state') initialState[b.source.key] = 'sample';
        }
      }
      const dir = tmp({ 'replies.json': JSON.stringify({ phases }) });
      const events: RunEvent[] = [];
      const result = await runWorkflow(model, { trigger, initialState, autoApprove: true, llm: { allUnbound: true, replies: join(dir, 'replies.json'), env: {} }, onEvent: (e) => events.push(e) });
      const notCompleted = Object.entries(result.phases).filter(([, p]) => p.status !== 'completed' && p.status !== 'skipped');
      expect(notCompleted.map(([n, p]) => `${n}: ${p.status} ${p.error?.code ?? ''} ${p.error?.message ?? ''}`)).toEqual([]);
      expect(events.filter((e) => e.type === 'task.agent_event' && e.kind === 'llm_call').length).toBeGreaterThan(0);
    });
  }
});

describe('the llm-review example with a real provider (OpenAI wire protocol on a loopback server)', () => {
  test('native strict schema for the reviewer, its MCP tool offered, prompting for the triager', async () => {
    const bodies: Record<string, unknown>[] = [];
    const review = { summary: 'Two bugs.', findings: [{ line: 8, severity: 'high', message: 'first item skipped' }] };
    const replies = [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'repo__read_file', arguments: '{"path":"cart.ts"}' } }] },
      { role: 'assistant', content: JSON.stringify(review) },
      { role: 'assistant', content: 'Blocked.\n```json\n{"decision": "request_changes", "blocking": 1}\n```' },
    ];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
        const message = replies.shift();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'gpt-5.2', choices: [{ index: 0, message, finish_reason: message?.tool_calls ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: 100, completion_tokens: 20 } }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const io = capture(root, { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: base });
      expect(await run(['run', 'llm-review', '--json', '--quiet'], io)).toBe(0);
      const result = JSON.parse(io.out()) as { cost_usd: number; phases: Record<string, { output?: Record<string, unknown> }> };
      expect(result.phases['report']!.output!['report']).toContain('line 8 [high] first item skipped');
      expect(result.cost_usd).toBeCloseTo(3 * ((100 * 1.75 + 20 * 14) / 1e6), 10);
      expect(bodies[0]!['response_format']).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
      expect((bodies[0]!['tools'] as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['repo__read_file']);
      expect(JSON.stringify(bodies[1]!['messages'])).toContain('1: export interface Item');
      expect(bodies[2]!['response_format']).toBeUndefined(); // the triager's schema has an optional field
    } finally {
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });
});

function capture(cwd: string, env: Record<string, string | undefined> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env, out: () => out, err: () => err };
}

describe('the CLI', () => {
  test('`baton run llm-review` runs offline from one command', async () => {
    const io = capture(root);
    expect(await run(['run', 'llm-review', '--json', '--quiet'], io)).toBe(0);
    const result = JSON.parse(io.out()) as { status: string; phases: Record<string, { output?: Record<string, unknown> }> };
    expect(result.status).toBe('completed');
    expect(result.phases['triage']!.output!['decision']).toBe('request_changes');
    expect(io.err()).toContain('playing replies from replies.yaml');
  });

  test('--llm-agents runs a corpus workflow on a model with --replies; --llm names an agent', async () => {
    const dir = tmp({
      'wf.yaml': `
openintent: "1.0"
info: {name: corpus-like}
workflow:
  research: {assign: researcher, outputs: [sources, findings]}
  summarize: {assign: writer, depends_on: [research], inputs: {f: research.findings}, outputs: {summary: string}}
`,
      'replies.yaml': `
agents:
  researcher: ['{"sources": ["a"], "findings": ["b"]}']
  writer: ['All good.']
`,
    });
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--llm-agents', '--replies', 'replies.yaml', '--json', '--quiet'], io)).toBe(0);
    const result = JSON.parse(io.out()) as { phases: Record<string, { output?: Record<string, unknown> }> };
    expect(result.phases['summarize']!.output).toEqual({ summary: 'All good.' });
    const io2 = capture(dir);
    expect(await run(['run', 'wf.yaml', '--llm', 'nobody', '--replies', 'replies.yaml'], io2)).toBe(2);
    expect(io2.err()).toContain('--llm nobody');
    const io3 = capture(dir);
    expect(await run(['run', 'wf.yaml', '--llm-agents', '--replies', 'missing.yaml'], io3)).toBe(2);
    expect(io3.err()).toContain('no such file');
  });

  test('a missing API key names the variable and where its provider was chosen (file:line:col), with no stack trace', async () => {
    const dir = tmp({
      'wf.yaml': `openintent: "1.0"
info: {name: keys}
llm:
  provider: openai
agents:
  w: {system_prompt: Write.}
  critic:
    system_prompt: Judge.
    llm: {provider: anthropic}
workflow:
  write: {assign: w, outputs: {text: string}}
  judge: {assign: critic, outputs: {ok: boolean}}
`,
    });
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--llm-agents', '--store', 'memory'], io)).toBe(1);
    const err = io.out() + io.err();
    expect(err).toMatch(/llm_missing_key: OPENAI_API_KEY is not set \(llm\.provider: openai at \S*wf\.yaml:4:13\)/);
    expect(err).toMatch(/llm_missing_key: ANTHROPIC_API_KEY is not set \(agents\.critic\.llm\.provider: anthropic at \S*wf\.yaml:9:21\)/);
    expect(err).not.toMatch(/^\s+at /m);
  });

  test('baton validate reports blueprint problems with positions', async () => {
    const io = capture(root);
    expect(await run(['validate', 'test/fixtures/diagnostics/output-schema-mismatch.yaml'], io)).toBe(1);
    expect(io.out()).toMatch(/output-schema-mismatch\.yaml:19:7: error\[output-schema-mismatch\]/);
  });
});

describe('MCP servers of a run on a long-lived engine', () => {
  test('stop when their run ends, not when the engine closes', async () => {
    const fixtures = join(root, 'test', 'fixtures', 'mcp');
    const dir = tmp({
      'replies.yaml': `phases:\n  look:\n    - tool_calls: [{tool: mcp:p/pid, arguments: {}}]\n    - text: '{"ok": true}'\n`,
    });
    const pidFile = join(dir, 'pids');
    const wf = parseWorkflow(`
openintent: "1.0"
info: {name: pids}
llm: {provider: scripted, x-replies: replies.yaml}
mcp:
  servers:
    p: {command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(join(fixtures, 'hang-server.mjs'))}, pid], env: {BATON_MCP_PID_FILE: ${JSON.stringify(pidFile)}}}
agents:
  seeker: {tools: [mcp:p/pid], system_prompt: look}
workflow:
  look: {assign: seeker, outputs: {ok: boolean}}
`);
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const pids = (): number[] => (existsSync(pidFile) ? readFileSync(pidFile, 'utf8').trim().split('\n').map(Number) : []);
    const engine = createEngine({ store: new MemoryStore(), llm: { cwd: dir, env: {} } });
    try {
      for (let i = 1; i <= 2; i++) {
        const r = await engine.run(wf.model!);
        expect(r.status).toBe('completed');
        // each run started its own server, and it is gone with its run although the engine is still open
        expect(pids()).toHaveLength(i);
        await expect.poll(() => pids().filter(alive), { timeout: 5_000 }).toEqual([]);
      }
    } finally {
      await engine.close();
    }
  }, 30_000);
});

describe('a run budget and parallel LLM phases (OpenAI wire protocol on a loopback server)', () => {
  test('calls whose worst cases fit the budget one at a time are not made at once: the run never overspends', async () => {
    let open = 0;
    let most = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        open++;
        most = Math.max(most, open);
        // a slow model: both phases would be in flight together
        setTimeout(() => {
          open--;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: '{"v": 1}' }, finish_reason: 'stop' }], usage: { prompt_tokens: 500, completion_tokens: 800 } }));
        }, 200);
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      // each call's worst case is about $0.00068 (max_tokens 1000 out at $0.60/M, the prompt in at $0.15/M) and
      // costs $0.000555: one fits the $0.001 budget, two at once do not
      const wf = parseWorkflow(`
openintent: "1.0"
info: {name: budget}
governance: {max_cost_usd: 0.001}
llm: {provider: openai, model: gpt-4o-mini, max_tokens: 1000, x-base_url: "${base}"}
workflow:
  a: {assign: w, outputs: {v: integer}}
  b: {assign: w, outputs: {v: integer}}
`);
      const r = await runWorkflow(wf.model!, { llm: { allUnbound: true, env: { OPENAI_API_KEY: 'sk-test' } } });
      expect(most).toBe(1);
      expect(r.cost_usd).toBeLessThanOrEqual(0.001);
      // one phase ran; the other's next call could not fit what was left, and was never made
      const codes = Object.values(r.phases).map((p) => p.status === 'completed' ? 'completed' : p.error?.code);
      expect(codes.sort()).toEqual(['completed', 'llm_budget_exceeded']);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  }, 30_000);
});
