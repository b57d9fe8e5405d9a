/**
 * `baton serve`'s API against a real server on a loopback port, over each real store (memory, SQLite
 * in a temp dir, PostgreSQL in a database of its own): every route's success and failure, every role,
 * bad bodies that change nothing, gates decided by the right person, and SSE resumed after a drop.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROUTES } from '@baton-run/baton/server';
import type { CliIo } from '../../src/cli/io.js';
import { run as cli } from '../../src/cli/main.js';
import { ASK, CHAIN, FAILS, GATED, KEYS, SLOW, api, startHarness, type Harness, type StoreKind } from './harness.js';
import { eventsOf, readStream } from './sse.js';
import type { RunStore } from '../../src/engine/ports.js';

const { admin, operator, reader, alice, agent } = KEYS;

/** Starts a run and waits for its end through its event stream; returns the run id and its events. */
async function runToEnd(h: Harness, body: Record<string, unknown>, key: string = operator): Promise<{ id: string; events: ReturnType<typeof eventsOf>; status: string }> {
  const started = await api(h.url, 'POST', '/runs', { key, body });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  const id = started.body['run_id'] as string;
  const s = await readStream(`${h.url}/runs/${id}/events`, { key });
  expect(s.ended).toBe(true);
  const end = JSON.parse(s.messages[s.messages.length - 1]!.data) as { status: string };
  return { id, events: eventsOf(s.messages), status: end.status };
}

/** Starts a run and reads its stream until a gate opens; returns the run id and the gate id. */
async function runToGate(h: Harness, workflow: string): Promise<{ id: string; gate: string; lastSeq: number }> {
  const started = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow } });
  expect(started.status).toBe(201);
  const id = started.body['run_id'] as string;
  const s = await readStream(`${h.url}/runs/${id}/events`, { key: reader, until: (m) => m.event === 'gate.opened' });
  const opened = eventsOf(s.messages).find((e) => e.type === 'gate.opened');
  expect(opened).toBeDefined();
  return { id, gate: opened!['gate_id'] as string, lastSeq: opened!.seq };
}

describe.each<StoreKind>(['memory', 'sqlite', 'postgres'])('the API over the %s store', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind, { bodyLimit: 64 * 1024 });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  }, 60_000);

  describe('keys and roles', () => {
    test('no key or an unknown key: 401 with a JSON error and WWW-Authenticate', async () => {
      for (const key of [undefined, 'not-a-key-at-all-0000']) {
        const r = await api(h.url, 'GET', '/runs', key !== undefined ? { key } : {});
        expect(r.status).toBe(401);
        expect(r.body).toMatchObject({ error: { code: 'unauthorized' } });
        expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      }
      const malformed = await api(h.url, 'GET', '/runs', { headers: { authorization: 'Basic abc' } });
      expect(malformed.status).toBe(401);
    });

    test('one keep-alive connection that presents different keys in turn is judged by each (a matched key is remembered per connection)', async () => {
      const pool = new Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<unknown>();
      const get = (key: string): Promise<number> =>
        new Promise((resolve, reject) => {
          const req = httpRequest(`${h.url}/runs`, { agent: pool, headers: { authorization: `Bearer ${key}` } }, (res) => {
            sockets.add(res.socket);
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
          req.end();
        });
      try {
        expect(await get(reader)).toBe(200);
        expect(await get(reader)).toBe(200);
        expect(await get(agent)).toBe(403);
        expect(await get('not-a-key-at-all-0000')).toBe(401);
        expect(await get(reader)).toBe(200);
        expect(await get(`${reader}x`)).toBe(401);
        expect(sockets.size).toBe(1);
      } finally {
        pool.destroy();
      }
    });

    test('X-API-Key works as well as Authorization: Bearer', async () => {
      expect((await api(h.url, 'GET', '/runs', { headers: { 'x-api-key': reader } })).status).toBe(200);
    });

    test('reader reads but may not start, cancel, approve or respond: 403', async () => {
      expect((await api(h.url, 'GET', '/runs', { key: reader })).status).toBe(200);
      const start = await api(h.url, 'POST', '/runs', { key: reader, body: { workflow: CHAIN } });
      expect(start.status).toBe(403);
      expect(start.body).toMatchObject({ error: { code: 'forbidden' } });
      for (const path of ['/runs/r/cancel', '/runs/r/gates/g/approve', '/runs/r/gates/g/deny', '/runs/r/rerun']) expect((await api(h.url, 'POST', path, { key: reader, body: {} })).status).toBe(403);
      expect((await api(h.url, 'POST', '/runs/r/gates/g/respond', { key: reader, body: { value: 1 } })).status).toBe(403);
    });

    test('an agent:<id> key may do nothing on these routes (its routes are the remote-agent ones)', async () => {
      expect((await api(h.url, 'GET', '/runs', { key: agent })).status).toBe(403);
      expect((await api(h.url, 'POST', '/runs', { key: agent, body: { workflow: CHAIN } })).status).toBe(403);
      expect((await api(h.url, 'GET', '/metrics', { key: agent })).status).toBe(403);
    });

    test('operator and admin start runs; /openapi.json and /health need no key', async () => {
      expect((await runToEnd(h, { workflow: CHAIN }, operator)).status).toBe('completed');
      expect((await runToEnd(h, { workflow: CHAIN }, admin)).status).toBe('completed');
      expect((await api(h.url, 'GET', '/openapi.json')).status).toBe(200);
      expect(await api(h.url, 'GET', '/health')).toMatchObject({ status: 200, body: { ok: true, store: kind } });
    });

    test('a posted workflow that runs commands or reads files on the server is for admins only', async () => {
      const cmd = `openintent: "1.0"\ninfo: {name: cmd}\nagents:\n  sh: {x-command: ["node", "-e", "process.stdout.write(JSON.stringify({n: 7}))"]}\nworkflow:\n  a: {assign: sh, outputs: {n: number}}\n`;
      const reaching = [
        cmd,
        `openintent: "1.0"\ninfo: {name: c}\nagents:\n  x: {x-contract: /etc/passwd}\nworkflow:\n  a: {assign: x}\n`,
        `openintent: "1.0"\ninfo: {name: c}\nagents:\n  x: {x-blueprint: ../secrets.yaml}\nworkflow:\n  a: {assign: x}\n`,
        `openintent: "1.0"\ninfo: {name: c}\nmcp:\n  servers:\n    sh: {command: sh}\nworkflow:\n  a: {assign: x}\n`,
        `openintent: "1.0"\ninfo: {name: c}\nagents:\n  x: {x-a2a: {url: "http://169.254.169.254/", token_env: HOME}}\nworkflow:\n  a: {assign: x}\n`,
        // through an alias: the node is defined under a harmless key and used as an agent
        `openintent: "1.0"\ninfo: {name: c, x-note: &sh {x-command: ["sh", "-c", "id"]}}\nagents:\n  x: *sh\nworkflow:\n  a: {assign: x}\n`,
      ];
      const before = (await h.store.runs({ limit: 1000 })).length;
      for (const wf of reaching) {
        const r = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: wf } });
        expect(r.status, wf).toBe(403);
        expect((r.body['error'] as { code: string; message: string }).message).toMatch(/reaches the server's host: .*(runs a command|reads a file|runs commands|calls a URL)/);
        expect((await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow: wf } })).status).toBe(403);
      }
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
      // anchors that repeat anchors (a billion laughs): answered at once, and nothing runs
      const laughs = ['a: &a [x, x, x, x, x, x, x, x, x]'];
      for (let i = 1; i < 12; i++) laughs.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [*${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}, *${String.fromCharCode(96 + i)}]`);
      const t0 = performance.now();
      const lol = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: `openintent: "1.0"\ninfo: {name: lol}\nx-lol:\n${laughs.map((l) => `  ${l}`).join('\n')}\nworkflow:\n  a: {assign: x}\n` } });
      expect(lol.status).toBe(422);
      expect(performance.now() - t0).toBeLessThan(5_000);
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
      // auto-approval decides gates whoever their approvers are: admins only too
      expect(await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: CHAIN, auto_approve: true } })).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
      const ran = await runToEnd(h, { workflow: cmd }, admin);
      expect(ran.status).toBe('completed');
      expect((await api(h.url, 'GET', `/runs/${ran.id}/phases/a`, { key: reader })).body).toMatchObject({ output: { n: 7 } });
      // the server remembers compiled texts, but never one that reaches the host: an admin's run of it does not open it to others
      expect((await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: cmd } })).status).toBe(403);
      // AIP-16 files are read and written in the server's folder (its agents module, its keys, its store) when
      // the workflow runs: validating one is open to every reader, running one is for admins (registered ones aside)
      const files = `openintent: "1.0"\ninfo: {name: f}\nworkflow:\n  a:\n    assign: x\n    outputsFiles: {o: {path: agents.mjs}}\n`;
      expect((await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow: files } })).status).toBe(200);
      for (const wf of [files, files.replace('outputsFiles: {o: {path: agents.mjs}}', 'inputsFiles: {k: {path: keys.env}}')]) {
        const r = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: wf } });
        expect(r.status, wf).toBe(403);
        expect((r.body['error'] as { message: string }).message).toMatch(/reaches the server's host: workflow\.a\.(outputsFiles \(writes|inputsFiles \(reads) files in the server's workspace\); only an admin key may run/);
      }
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before + 1);
    });
  });

  describe('posted texts are remembered compiled', () => {
    test('the same text runs again and again, and its diagnostics carry each request\'s file name', async () => {
      for (let i = 0; i < 3; i++) expect((await runToEnd(h, { workflow: CHAIN }, operator)).status).toBe('completed');
      const broken = `openintent: "1.0"\ninfo: {name: b}\nworkflow:\n  a: {assign: x, depends_on: [nope]}\n`;
      for (const file of ['one.yaml', 'two.yaml', 'one.yaml']) {
        const r = await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow: broken, file } });
        expect(r.status).toBe(200);
        const f = (r.body['files'] as { file: string; valid: boolean; diagnostics: { code: string }[] }[])[0]!;
        expect(f).toMatchObject({ file, valid: false });
        expect(f.diagnostics.map((d) => d.code)).toContain('unknown-dependency');
        const run = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: broken } });
        expect(run.status).toBe(422);
        expect((run.body['error'] as { message: string }).message).toContain('workflow.yaml');
      }
    });
  });

  describe('POST /workflows/validate', () => {
    test('the same diagnostics as `baton validate --json`', async () => {
      const file = join(import.meta.dirname, '..', '..', 'examples', 'broken.yaml');
      let out = '';
      const io: CliIo = { stdout: (s) => (out += s), stderr: () => undefined, isTTY: false, cwd: process.cwd(), env: {} };
      expect(await cli(['validate', file, '--json'], io)).toBe(1);
      const local = (JSON.parse(out) as { files: { valid: boolean; diagnostics: unknown[] }[] }).files[0]!;
      const { readFileSync } = await import('node:fs');
      const r = await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow: readFileSync(file, 'utf8'), file: 'broken.yaml' } });
      expect(r.status).toBe(200);
      const remote = (r.body['files'] as { file: string; valid: boolean; diagnostics: unknown[] }[])[0]!;
      expect(remote.file).toBe('broken.yaml');
      expect(remote.valid).toBe(false);
      expect(remote.diagnostics.length).toBeGreaterThan(0);
      expect(remote.diagnostics).toEqual(local.diagnostics);
    });

    test('a valid text, a registered name, an unknown name, and neither or both', async () => {
      expect((await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow: CHAIN } })).body).toEqual({ files: [{ file: 'workflow.yaml', valid: true, form: 'openintent', diagnostics: [] }] });
      expect((await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow_name: 'chain' } })).body).toEqual({ files: [{ file: 'chain.yaml', valid: true, form: 'openintent', diagnostics: [] }] });
      expect(await api(h.url, 'POST', '/workflows/validate', { key: reader, body: { workflow_name: 'nope' } })).toMatchObject({ status: 404, body: { error: { code: 'unknown-workflow' } } });
      for (const body of [{}, { workflow: CHAIN, workflow_name: 'chain' }]) {
        const r = await api(h.url, 'POST', '/workflows/validate', { key: reader, body });
        expect(r.status).toBe(400);
        expect((r.body['error'] as { message: string }).message).toMatch(/exactly one of `workflow` and `workflow_name`/);
      }
      expect((await api(h.url, 'GET', '/workflows', { key: reader })).body).toEqual({ workflows: [{ name: 'chain' }, { name: 'triggered' }] });
    });
  });

  describe('POST /runs', () => {
    test('from a text, run by the server’s worker to its end', async () => {
      const { id, events, status } = await runToEnd(h, { workflow: CHAIN });
      expect(status).toBe('completed');
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const got = await api(h.url, 'GET', `/runs/${id}`, { key: reader });
      expect(got.body).toMatchObject({ run_id: id, status: 'completed', phases: { a: { status: 'completed', output: { n: 1 } }, b: { status: 'completed', output: { m: 'got {"n":1}' } } } });
    });

    test('from a registered name, with a trigger checked against x-trigger (422 when it does not fit)', async () => {
      const { id, status } = await runToEnd(h, { workflow_name: 'triggered', trigger: { topic: 'solar' } });
      expect(status).toBe('completed');
      expect((await api(h.url, 'GET', `/runs/${id}`, { key: reader })).body).toMatchObject({ trigger: { topic: 'solar' }, phases: { a: { input: { t: 'solar' } } } });
      const before = (await h.store.runs({ limit: 1000 })).length;
      const bad = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow_name: 'triggered', trigger: { topic: 3 } } });
      expect(bad).toMatchObject({ status: 422, body: { error: { code: 'invalid-input' } } });
      expect(await api(h.url, 'POST', '/runs', { key: operator, body: { workflow_name: 'missing' } })).toMatchObject({ status: 404, body: { error: { code: 'unknown-workflow' } } });
      // a registered name sent as the text: the answer says which field takes a name
      const asText = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: 'triggered' } });
      expect(asText).toMatchObject({ status: 422, body: { error: { code: 'invalid-workflow' } } });
      expect((asText.body as { error: { message: string } }).error.message).toContain('{"workflow_name": "triggered"}');
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
    });

    test('--workflows DIR: a workflow added after the server started is served by its name and listed; one removed is gone', async () => {
      const late = join(h.dir, 'flows', 'late.yaml');
      const folder = join(h.dir, 'flows', 'later');
      try {
        writeFileSync(late, CHAIN.replace('name: chain', 'name: late'));
        const { status } = await runToEnd(h, { workflow_name: 'late' });
        expect(status).toBe('completed');
        mkdirSync(folder);
        writeFileSync(join(folder, 'workflow.yaml'), CHAIN.replace('name: chain', 'name: later'));
        expect((await api(h.url, 'GET', '/workflows', { key: reader })).body).toEqual({ workflows: [{ name: 'chain' }, { name: 'late' }, { name: 'later' }, { name: 'triggered' }] });
        expect((await runToEnd(h, { workflow_name: 'later' })).status).toBe('completed');
      } finally {
        rmSync(late, { force: true });
        rmSync(folder, { recursive: true, force: true });
      }
      expect(await api(h.url, 'POST', '/runs', { key: operator, body: { workflow_name: 'late' } })).toMatchObject({ status: 404, body: { error: { code: 'unknown-workflow' } } });
      expect((await api(h.url, 'GET', '/workflows', { key: reader })).body).toEqual({ workflows: [{ name: 'chain' }, { name: 'triggered' }] });
    });

    test('initial state reaches the run', async () => {
      const { id } = await runToEnd(h, { workflow: CHAIN, initial_state: { region: 'eu' } });
      expect((await api(h.url, 'GET', `/runs/${id}`, { key: reader })).body).toMatchObject({ initial_state: { region: 'eu' } });
    });

    test('idempotent with run_id: the same body answers the same run (200), another body 409', async () => {
      const id = `idem-${kind}`;
      const body = { workflow: CHAIN, run_id: id, trigger: { a: 1, b: [1, 2] } };
      const first = await api(h.url, 'POST', '/runs', { key: operator, body });
      expect(first.status).toBe(201);
      // the same body, its keys in another order
      const again = await api(h.url, 'POST', '/runs', { key: operator, body: { run_id: id, trigger: { b: [1, 2], a: 1 }, workflow: CHAIN } });
      expect(again.status).toBe(200);
      expect(again.body['run_id']).toBe(id);
      for (const [key, other] of [[operator, { ...body, trigger: { a: 2 } }], [operator, { ...body, workflow: GATED }], [operator, { ...body, initial_state: { x: 1 } }], [admin, { ...body, auto_approve: true }]] as const) {
        const r = await api(h.url, 'POST', '/runs', { key, body: other });
        expect(r.status).toBe(409);
        expect(r.body).toMatchObject({ error: { code: 'run-exists', run_id: id } });
      }
      expect((await h.store.runs({ limit: 1000 })).filter((r) => r.runId === id)).toHaveLength(1);
      // concurrent starts with one id: one run, every answer 200 or 201
      const cid = `idem-race-${kind}`;
      const answers = await Promise.all([1, 2, 3, 4].map(() => api(h.url, 'POST', '/runs', { key: operator, body: { workflow: CHAIN, run_id: cid } })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 201]);
      // a trigger or initial state left out is the `{}` given: the same start
      expect((await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: CHAIN, run_id: cid, trigger: {}, initial_state: {} } })).status).toBe(200);
      expect((await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: CHAIN, run_id: id.replace('idem', 'idem-none'), trigger: {} } })).status).toBe(201);
      expect((await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: CHAIN, run_id: id.replace('idem', 'idem-none') } })).status).toBe(200);
      await readStream(`${h.url}/runs/${cid}/events`, { key: reader });
      await readStream(`${h.url}/runs/${id}/events`, { key: reader });
    });

    test('an invalid workflow: 422 with diagnostics, nothing stored', async () => {
      const before = (await h.store.runs({ limit: 1000 })).length;
      const r = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: 'openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: x, depends_on: [nope]}\n' } });
      expect(r.status).toBe(422);
      const err = r.body['error'] as { code: string; diagnostics: { code: string; line: number }[] };
      expect(err.code).toBe('invalid-workflow');
      expect(err.diagnostics.length).toBeGreaterThan(0);
      expect(err.diagnostics[0]!.line).toBe(4);
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
    });

    test('an agent nothing binds: 422 unbound-agent, nothing stored', async () => {
      const before = (await h.store.runs({ limit: 1000 })).length;
      const r = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: 'openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: nobody}\n' } });
      expect(r).toMatchObject({ status: 422, body: { error: { code: 'unbound-agent' } } });
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
    });

    test('a failing agent: the run fails and the stream ends with status failed', async () => {
      const { status, events } = await runToEnd(h, { workflow: FAILS });
      expect(status).toBe('failed');
      expect(events.some((e) => e.type === 'run.failed')).toBe(true);
    });
  });

  describe('reading runs', () => {
    test('GET /runs: filters and cursor pagination that sees every run once', async () => {
      for (let i = 0; i < 3; i++) await runToEnd(h, { workflow: CHAIN });
      const all = (await api(h.url, 'GET', '/runs?limit=1000', { key: reader })).body['runs'] as { run_id: string; status: string; workflow: string }[];
      expect(all.length).toBeGreaterThanOrEqual(5);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r = await api(h.url, 'GET', `/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: reader });
        expect(r.status).toBe(200);
        const runs = r.body['runs'] as { run_id: string }[];
        expect(runs.length).toBeLessThanOrEqual(2);
        seen.push(...runs.map((x) => x.run_id));
        cursor = r.body['next_cursor'] as string | null;
        pages++;
      } while (cursor && pages < 100);
      expect(seen).toEqual(all.map((x) => x.run_id));
      const failed = (await api(h.url, 'GET', '/runs?status=failed', { key: reader })).body['runs'] as { status: string }[];
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.every((x) => x.status === 'failed')).toBe(true);
      const chains = (await api(h.url, 'GET', '/runs?workflow=chain&status=completed,failed', { key: reader })).body['runs'] as { workflow: string }[];
      expect(chains.length).toBeGreaterThan(0);
      expect(chains.every((x) => x.workflow === 'chain')).toBe(true);
    });

    test('a for_each phase: its items counted under fan_out, not listed among the phases; /items pages them', async () => {
      const fan = `openintent: "1.0"
info: {name: fan}
workflow:
  each:
    assign: y
    for_each: $trigger.list
    inputs: {v: $item}
  after:
    assign: x
    depends_on: [each]
`;
      const { id, status } = await runToEnd(h, { workflow: fan, trigger: { list: [1, 2, 3, 4, 5] } });
      expect(status).toBe('completed');
      const run = (await api(h.url, 'GET', `/runs/${id}`, { key: reader })).body as { phases: Record<string, unknown>; fan_out: Record<string, unknown> };
      expect(Object.keys(run.phases).sort()).toEqual(['after', 'each']);
      expect(run.fan_out).toEqual({ each: { items: 5, counts: { completed: 5 }, list: `/runs/${id}/phases/each/items` } });
      const phases = (await api(h.url, 'GET', `/runs/${id}/phases`, { key: reader })).body['phases'] as { name: string }[];
      expect(phases.map((p) => p.name).sort()).toEqual(['after', 'each']);
      const seen: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r = await api(h.url, 'GET', `/runs/${id}/phases/each/items?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: reader });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ phase: 'each', count: 5, counts: { completed: 5 } });
        const items = r.body['items'] as { index: number; status: string; output: { m: string } }[];
        expect(items.length).toBeLessThanOrEqual(2);
        for (const it of items) expect(it).toMatchObject({ index: it.index, status: 'completed', output: { m: `got ${JSON.stringify({ v: it.index + 1 })}` } });
        seen.push(...items.map((x) => x.index));
        cursor = r.body['next_cursor'] as string | null;
        pages++;
      } while (cursor && pages < 10);
      expect(seen).toEqual([0, 1, 2, 3, 4]);
      expect(pages).toBe(3);
      const none = await api(h.url, 'GET', `/runs/${id}/phases/after/items`, { key: reader });
      expect(none.status).toBe(404);
      expect(none.body).toMatchObject({ error: { code: 'unknown-phase' } });
      expect((await api(h.url, 'GET', `/runs/${id}/phases/each/items?limit=0`, { key: reader })).status).toBe(400);
      expect((await api(h.url, 'GET', `/runs/${id}/phases/each/items?cursor=garbage`, { key: reader })).status).toBe(400);
    });

    test('GET /runs: bad queries are 400 with the parameter named', async () => {
      for (const [q, re] of [
        ['limit=0', /limit/],
        ['limit=abc', /limit/],
        ['status=done', /status/],
        ['cursor=xyz', /cursor/],
        ['sort=asc', /unknown query parameter `sort`/],
        // given twice: the second was dropped unchecked (an invalid status answered 200)
        ['status=running&status=pending', /status is given 2 times/],
      ] as const) {
        const r = await api(h.url, 'GET', `/runs?${q}`, { key: reader });
        expect(r.status, q).toBe(400);
        expect((r.body['error'] as { message: string }).message).toMatch(re);
      }
    });

    test('a run, its phases, one phase, its events (paged, by type) and its artifacts; 404 for what does not exist', async () => {
      const { id, events } = await runToEnd(h, { workflow: CHAIN });
      expect((await api(h.url, 'GET', `/runs/${id}/phases?status=completed`, { key: reader })).body).toMatchObject({ phases: [{ name: 'a', status: 'completed' }, { name: 'b', status: 'completed' }], next_cursor: null });
      const p1 = await api(h.url, 'GET', `/runs/${id}/phases?limit=1`, { key: reader });
      expect((p1.body['phases'] as unknown[]).length).toBe(1);
      const p2 = await api(h.url, 'GET', `/runs/${id}/phases?limit=1&cursor=${p1.body['next_cursor'] as string}`, { key: reader });
      expect(p2.body).toMatchObject({ phases: [{ name: 'b' }], next_cursor: null });
      expect((await api(h.url, 'GET', `/runs/${id}/phases/b`, { key: reader })).body).toMatchObject({ name: 'b', output: { m: 'got {"n":1}' } });
      expect(await api(h.url, 'GET', `/runs/${id}/phases/zz`, { key: reader })).toMatchObject({ status: 404, body: { error: { code: 'unknown-phase' } } });
      const page1 = await api(h.url, 'GET', `/runs/${id}/events?limit=3`, { key: reader });
      expect((page1.body['events'] as { seq: number }[]).map((e) => e.seq)).toEqual([1, 2, 3]);
      const page2 = await api(h.url, 'GET', `/runs/${id}/events?limit=100&cursor=${page1.body['next_cursor'] as string}`, { key: reader });
      expect((page2.body['events'] as { seq: number }[]).map((e) => e.seq)).toEqual(events.slice(3).map((e) => e.seq));
      expect(page2.body['next_cursor']).toBeNull();
      const completed = (await api(h.url, 'GET', `/runs/${id}/events?type=task.completed`, { key: reader })).body['events'] as { type: string }[];
      expect(completed.map((e) => e.type)).toEqual(['task.completed', 'task.completed']);
      expect((await api(h.url, 'GET', `/runs/${id}/events?after=5`, { key: reader })).body['events']).toEqual(events.filter((e) => e.seq > 5));
      expect((await api(h.url, 'GET', `/runs/${id}/artifacts`, { key: reader })).body).toEqual({ artifacts: [], next_cursor: null });
      for (const path of ['', '/phases', '/gates', '/events', '/artifacts']) expect(await api(h.url, 'GET', `/runs/no-such-run${path}`, { key: reader })).toMatchObject({ status: 404, body: { error: { code: 'unknown-run' } } });
      expect((await readStream(`${h.url}/runs/no-such-run/events`, { key: reader })).status).toBe(404);
      expect((await api(h.url, 'GET', '/runs/bad%20id', { key: reader })).status).toBe(400);
    });
    test('a run that has not ended has no ended_at nor duration_ms, as GET /runs says; once it ended, both', async () => {
      const { id, gate } = await runToGate(h, GATED);
      const waiting = await api(h.url, 'GET', `/runs/${id}`, { key: reader });
      expect(waiting.body).toMatchObject({ status: 'waiting', ended_at: null, duration_ms: null });
      const listed = (await api(h.url, 'GET', '/runs?status=waiting&limit=1000', { key: reader })).body['runs'] as { run_id: string; ended_at: unknown }[];
      expect(listed.find((r) => r.run_id === id)).toMatchObject({ ended_at: null });
      expect((await api(h.url, 'POST', `/runs/${id}/gates/${gate}/approve`, { key: alice, body: {} })).status).toBe(200);
      await readStream(`${h.url}/runs/${id}/events`, { key: reader });
      const ended = (await api(h.url, 'GET', `/runs/${id}`, { key: reader })).body as { status: string; started_at: number; ended_at: number; duration_ms: number };
      expect(ended.status).toBe('completed');
      expect(typeof ended.ended_at).toBe('number');
      expect(ended.duration_ms).toBe(ended.ended_at - ended.started_at);
      const row = (await api(h.url, 'GET', '/runs?status=completed&limit=1000', { key: reader })).body['runs'] as { run_id: string; ended_at: unknown }[];
      expect(row.find((r) => r.run_id === id)?.ended_at).toBe(ended.ended_at);
    });
  });

  describe('gates, cancel and rerun', () => {
    test('approval: only a named approver (by key name), then the run goes on', async () => {
      const { id, gate } = await runToGate(h, GATED);
      expect((await api(h.url, 'GET', `/runs/${id}/gates?status=open`, { key: reader })).body).toMatchObject({ gates: [{ id: gate, status: 'open', approvers: ['alice'] }] });
      // bob is an operator but not an approver of this gate
      const bob = await api(h.url, 'POST', `/runs/${id}/gates/${gate}/approve`, { key: operator, body: {} });
      expect(bob).toMatchObject({ status: 403, body: { error: { code: 'not-an-approver' } } });
      expect(await api(h.url, 'POST', `/runs/${id}/gates/${gate}/approve`, { key: operator, body: { as: 'alice' } })).toMatchObject({ status: 400 });
      expect(await api(h.url, 'POST', `/runs/${id}/gates/nope/approve`, { key: alice, body: {} })).toMatchObject({ status: 404, body: { error: { code: 'unknown-gate' } } });
      const ok = await api(h.url, 'POST', `/runs/${id}/gates/${gate}/approve`, { key: alice, body: { comment: 'fine' } });
      expect(ok).toMatchObject({ status: 200, body: { run_id: id, gate_id: gate, decision: 'approved', by: 'alice', comment: 'fine' } });
      const rest = await readStream(`${h.url}/runs/${id}/events`, { key: reader });
      expect(JSON.parse(rest.messages[rest.messages.length - 1]!.data)).toMatchObject({ status: 'completed' });
      expect(eventsOf(rest.messages).find((e) => e.type === 'gate.decided')).toMatchObject({ by: 'alice', decision: 'approved' });
      // decided: a second decision is refused
      expect(await api(h.url, 'POST', `/runs/${id}/gates/${gate}/deny`, { key: alice, body: {} })).toMatchObject({ status: 409, body: { error: { code: 'gate-refused' } } });
    });

    test('deny: the run does not complete', async () => {
      const { id, gate } = await runToGate(h, GATED);
      expect((await api(h.url, 'POST', `/runs/${id}/gates/${gate}/deny`, { key: alice, body: { comment: 'no' } })).status).toBe(200);
      const rest = await readStream(`${h.url}/runs/${id}/events`, { key: reader });
      expect(JSON.parse(rest.messages[rest.messages.length - 1]!.data)).toMatchObject({ status: expect.stringMatching(/failed|cancelled/) as unknown });
    });

    test('respond to an input gate: a wrong answer 409, the right one completes the phase', async () => {
      const { id, gate } = await runToGate(h, ASK);
      expect((await api(h.url, 'GET', `/runs/${id}/gates`, { key: reader })).body).toMatchObject({ gates: [{ id: gate, kind: 'input', choices: ['red', 'blue'] }] });
      expect(await api(h.url, 'POST', `/runs/${id}/gates/${gate}/respond`, { key: operator, body: { value: 'green' } })).toMatchObject({ status: 409, body: { error: { code: 'gate-refused' } } });
      expect(await api(h.url, 'POST', `/runs/${id}/gates/${gate}/respond`, { key: operator, body: {} })).toMatchObject({ status: 400 });
      expect(await api(h.url, 'POST', `/runs/${id}/gates/${gate}/respond`, { key: operator, body: { value: 'blue' } })).toMatchObject({ status: 200, body: { decision: 'answered', value: 'blue', by: 'bob' } });
      await readStream(`${h.url}/runs/${id}/events`, { key: reader });
      expect((await api(h.url, 'GET', `/runs/${id}/phases/q`, { key: reader })).body).toMatchObject({ status: 'completed', output: { answer: 'blue' } });
    });

    test('cancel: a waiting run is cancelled; again is 409; an unknown run 404', async () => {
      const { id } = await runToGate(h, GATED);
      expect(await api(h.url, 'POST', `/runs/${id}/cancel`, { key: operator, body: { reason: 'not needed' } })).toMatchObject({ status: 200, body: { status: 'cancelled', reason: 'not needed' } });
      const rest = await readStream(`${h.url}/runs/${id}/events`, { key: reader });
      expect(JSON.parse(rest.messages[rest.messages.length - 1]!.data)).toMatchObject({ status: 'cancelled' });
      expect(await api(h.url, 'POST', `/runs/${id}/cancel`, { key: operator })).toMatchObject({ status: 409, body: { error: { code: 'run-ended' } } });
      expect(await api(h.url, 'POST', '/runs/none/cancel', { key: operator })).toMatchObject({ status: 404 });
    });

    test('rerun from a phase reuses what is upstream; an unknown phase is 400; a taken id 409', async () => {
      const { id } = await runToEnd(h, { workflow: CHAIN });
      const r = await api(h.url, 'POST', `/runs/${id}/rerun`, { key: operator, body: { from: 'b', run_id: `re-${kind}` } });
      expect(r).toMatchObject({ status: 201, body: { run_id: `re-${kind}` } });
      await readStream(`${h.url}/runs/re-${kind}/events`, { key: reader });
      expect((await api(h.url, 'GET', `/runs/re-${kind}`, { key: reader })).body).toMatchObject({ status: 'completed', phases: { a: { reused_from: id }, b: { status: 'completed' } } });
      expect((await api(h.url, 'POST', `/runs/${id}/rerun`, { key: operator, body: { from: 'zz' } })).status).toBe(400);
      expect((await api(h.url, 'POST', `/runs/${id}/rerun`, { key: operator, body: { from: 'b', run_id: `re-${kind}` } })).status).toBe(409);
      expect((await api(h.url, 'POST', `/runs/${id}/rerun`, { key: operator, body: {} })).status).toBe(400);
    });
  });

  describe('live streams', () => {
    test('SSE resumed after a disconnect with Last-Event-ID: every event once, in order', async () => {
      const { id, lastSeq } = await runToGate(h, GATED);
      // the first connection dropped at the gate; decide it while nobody listens
      const gates = (await api(h.url, 'GET', `/runs/${id}/gates`, { key: reader })).body['gates'] as { id: string }[];
      expect((await api(h.url, 'POST', `/runs/${id}/gates/${gates[0]!.id}/approve`, { key: alice })).status).toBe(200);
      const resumed = await readStream(`${h.url}/runs/${id}/events`, { key: reader, lastEventId: String(lastSeq) });
      expect(resumed.ended).toBe(true);
      const after = eventsOf(resumed.messages);
      expect(after[0]!.seq).toBe(lastSeq + 1);
      expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => lastSeq + 1 + i));
      const stored = await h.store.events(id);
      expect(after).toEqual(JSON.parse(JSON.stringify(stored.filter((e) => e.seq > lastSeq))));
      expect(after[after.length - 1]!.type).toBe('run.completed');
      // every SSE id is the seq
      expect(resumed.messages.filter((m) => m.id !== undefined).map((m) => Number(m.id))).toEqual(after.map((e) => e.seq));
    });

    test('a live stream sees events as they are committed, and ?type filters', async () => {
      const { id, gate } = await runToGate(h, GATED);
      const live = readStream(`${h.url}/runs/${id}/events?type=gate.decided,run.completed`, { key: reader });
      expect((await api(h.url, 'POST', `/runs/${id}/gates/${gate}/approve`, { key: alice })).status).toBe(200);
      const s = await live;
      expect(eventsOf(s.messages).map((e) => e.type)).toEqual(['gate.decided', 'run.completed']);
    });

    test('Last-Event-ID that is not a seq: 400; a stream resumed after the end ends at once', async () => {
      const { id, events } = await runToEnd(h, { workflow: CHAIN });
      expect((await readStream(`${h.url}/runs/${id}/events`, { key: reader, lastEventId: 'abc' })).status).toBe(400);
      const done = await readStream(`${h.url}/runs/${id}/events`, { key: reader, lastEventId: String(events.length) });
      expect(done).toMatchObject({ status: 200, ended: true });
      expect(eventsOf(done.messages)).toEqual([]);
    });

    test('the all-runs stream shows a new run and its end', async () => {
      // a run there before the stream opens: its first message (the runs there are) is the sign it is open
      await runToEnd(h, { workflow: CHAIN });
      const mine = { runId: undefined as string | undefined };
      const first = { resolve: (): void => undefined, promise: Promise.resolve() };
      first.promise = new Promise<void>((r) => (first.resolve = r));
      const stream = readStream(`${h.url}/events`, {
        key: reader,
        until: (m) => {
          first.resolve();
          if (m.event !== 'run') return false;
          const r = JSON.parse(m.data) as { run_id: string; status: string };
          return r.run_id === mine.runId && r.status === 'completed';
        },
      });
      // the stream is open before the run starts: its first message (the runs there are) has come
      await first.promise;
      mine.runId = (await runToEnd(h, { workflow: CHAIN })).id;
      const s = await stream;
      const rows = s.messages.filter((m) => m.event === 'run').map((m) => JSON.parse(m.data) as { run_id: string; status: string }).filter((r) => r.run_id === mine.runId);
      expect(rows[rows.length - 1]!.status).toBe('completed');
    });

    test('the all-runs stream reads the run rows at most five times a second, however many commits come', async () => {
      // counted on the server's own store object (the engine's): each read compares the newest 500 rows
      const store = h.store as { runs: RunStore['runs'] };
      const real = store.runs.bind(h.store);
      let reads = 0;
      store.runs = (f) => {
        reads++;
        return real(f);
      };
      try {
        const tag = Math.random().toString(36).slice(2, 8);
        const ids = Array.from({ length: 40 }, (_, i) => `dash-${tag}-${i}`);
        const completed = new Set<string>();
        const stream = readStream(`${h.url}/events`, {
          key: reader,
          until: (m) => {
            if (m.event !== 'run') return false;
            const r = JSON.parse(m.data) as { run_id: string; status: string };
            if (r.status === 'completed' && ids.includes(r.run_id)) completed.add(r.run_id);
            return completed.size === ids.length;
          },
        });
        const t0 = performance.now();
        for (const id of ids) await runToEnd(h, { workflow: CHAIN, run_id: id });
        await stream;
        const ms = performance.now() - t0;
        // 40 runs of two phases: a hundred commits and more, and a read of 500 rows for each before
        expect(reads).toBeLessThanOrEqual(3 + Math.ceil(ms / 200));
        expect(completed.size).toBe(ids.length);
      } finally {
        store.runs = real;
      }
    });
  });

  describe('bad requests change nothing', () => {
    test('malformed JSON, wrong content types, unknown fields, wrong types, oversized and deep bodies: 4xx with a message', async () => {
      const before = (await h.store.runs({ limit: 1000 })).length;
      const cases: [string, { raw?: string; body?: unknown; type?: string; headers?: Record<string, string> }, number, string][] = [
        ['malformed', { raw: '{"workflow": ' }, 400, 'malformed-json'],
        ['not an object', { raw: '[1, 2]' }, 400, 'invalid-request'],
        ['text/plain', { raw: JSON.stringify({ workflow: CHAIN }), type: 'text/plain' }, 415, 'unsupported-media-type'],
        ['form', { raw: 'workflow=x', type: 'application/x-www-form-urlencoded' }, 415, 'unsupported-media-type'],
        ['latin-1', { raw: JSON.stringify({ workflow: CHAIN }), type: 'application/json; charset=latin1' }, 415, 'unsupported-media-type'],
        ['compressed (Content-Encoding: gzip)', { raw: JSON.stringify({ workflow: CHAIN }), headers: { 'content-encoding': 'gzip' } }, 415, 'unsupported-media-type'],
        ['unknown field', { body: { workflow: CHAIN, priority: 1 } }, 400, 'invalid-request'],
        ['wrong type', { body: { workflow: CHAIN, trigger: 'x' } }, 400, 'invalid-request'],
        ['bad run id', { body: { workflow: CHAIN, run_id: '../etc' } }, 400, 'invalid-request'],
        ['oversized', { body: { workflow: CHAIN, trigger: { pad: 'x'.repeat(100 * 1024) } } }, 413, 'body-too-large'],
        ['deep', { raw: `{"workflow": "x", "trigger": ${'['.repeat(2000)}${']'.repeat(2000)}}` }, 400, 'malformed-json'],
      ];
      for (const [what, req, status, code] of cases) {
        const r = await api(h.url, 'POST', '/runs', { key: operator, ...req });
        expect([what, r.status], JSON.stringify(r.body)).toEqual([what, status]);
        expect((r.body['error'] as { code: string }).code).toBe(code);
        expect(typeof (r.body['error'] as { message: string }).message).toBe('string');
        expect(JSON.stringify(r.body)).not.toMatch(/\n\s+at /);
      }
      // malformed JSON says where, when JSON.parse does (line and column, as the CLI does for a trigger file)
      const trailing = await api(h.url, 'POST', '/runs', { key: operator, raw: '{\n  "workflow": "x",\n}' });
      expect(trailing.body['error']).toMatchObject({ code: 'malformed-json', line: 3, column: 1, message: expect.stringMatching(/line 3, column 1/) as string });
      const unknown = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: CHAIN, priority: 1 } });
      expect((unknown.body['error'] as { message: string }).message).toMatch(/unknown field `priority`/);
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
    });

    test('an oversized body sent in chunks without Content-Length is stopped at the limit', async () => {
      const chunk = new TextEncoder().encode(`{"workflow": "${'x'.repeat(16 * 1024)}`);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent++ < 10) c.enqueue(chunk);
          else c.close();
        },
      });
      // a streamed body (undici needs `duplex: 'half'`): no Content-Length, chunked
      const init: RequestInit & { duplex: 'half' } = { method: 'POST', headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' }, body, duplex: 'half' };
      const res = await fetch(`${h.url}/runs`, init);
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ error: { code: 'body-too-large' } });
    });

    test('hostile connections do not crash the server: garbage, a body cut short, a client gone mid-request', async () => {
      const { connect } = await import('node:net');
      const { port } = new URL(h.url);
      const send = (bytes: string, end: 'end' | 'destroy'): Promise<string> =>
        new Promise((resolve) => {
          const sock = connect(Number(port), '127.0.0.1');
          let got = '';
          sock.on('data', (d: Buffer) => (got += d.toString()));
          sock.on('error', () => resolve(got));
          sock.on('close', () => resolve(got));
          sock.write(bytes, () => (end === 'end' ? sock.end() : setImmediate(() => sock.destroy())));
        });
      expect(await send('NOT HTTP AT ALL\r\n\r\n', 'end')).toMatch(/^HTTP\/1\.1 400/);
      await send(`POST /runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${operator}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"workflow": "`, 'destroy');
      await send(`POST /runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${operator}\r\n`, 'destroy');
      const before = (await h.store.runs({ limit: 1000 })).length;
      expect(await api(h.url, 'GET', '/health')).toMatchObject({ status: 200, body: { ok: true } });
      expect((await runToEnd(h, { workflow: CHAIN })).status).toBe('completed');
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before + 1);
    });

    test('an unknown route is 404, a wrong method 405, both JSON', async () => {
      expect(await api(h.url, 'GET', '/nope', { key: reader })).toMatchObject({ status: 404, body: { error: { code: 'not-found' } } });
      const r = await api(h.url, 'DELETE', '/runs', { key: reader });
      expect(r).toMatchObject({ status: 405, body: { error: { code: 'method-not-allowed' } } });
      expect(r.headers.get('allow')).toBe('GET, POST');
    });
  });

  describe('/metrics', () => {
    test('phases completed, the attempt latency histogram, queue depth by agent and open gates', async () => {
      // the slow agent holds its attempts: three ready phases, concurrency 8, all claimed; then a gated run waits
      const started = await api(h.url, 'POST', '/runs', { key: operator, body: { workflow: SLOW } });
      const slowId = started.body['run_id'] as string;
      await readStream(`${h.url}/runs/${slowId}/events`, { key: reader, until: (_m, all) => eventsOf(all).filter((e) => e.type === 'task.claimed').length === 3 });
      const gated = await runToGate(h, GATED);
      const text = (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${reader}` } }).then((r) => r.text()));
      expect(text).toMatch(/^# TYPE baton_phases_completed_total counter$/m);
      expect(Number(/^baton_phases_completed_total\{agent="x"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
      expect(text).toMatch(/^baton_attempt_duration_seconds_bucket\{agent="x",outcome="completed",le="\+Inf"\} \d+$/m);
      expect(text).toMatch(/^baton_attempt_duration_seconds_count\{agent="x",outcome="completed"\} \d+$/m);
      expect(text).toMatch(/^baton_tasks_running\{agent="slow"\} 3$/m);
      expect(Number(/^baton_gates_open\{kind="run"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
      expect(text).toMatch(/^baton_http_requests_total\{route="\/runs",status="201"\} \d+$/m);
      h.latch.release();
      await readStream(`${h.url}/runs/${slowId}/events`, { key: reader });
      await api(h.url, 'POST', `/runs/${gated.id}/cancel`, { key: operator });
      expect(await api(h.url, 'GET', '/metrics')).toMatchObject({ status: 401 });
    });

    test('queue depth counts ready tasks of an agent no worker takes', async () => {
      // a run whose ready task is for `slow` while every slot of the worker is taken by slow attempts
      const small = await startHarness(kind, { concurrency: 1 });
      try {
        const started = await api(small.url, 'POST', '/runs', { key: operator, body: { workflow: SLOW } });
        const id = started.body['run_id'] as string;
        await readStream(`${small.url}/runs/${id}/events`, { key: reader, until: (_m, all) => eventsOf(all).some((e) => e.type === 'task.claimed') });
        const text = await fetch(`${small.url}/metrics`, { headers: { authorization: `Bearer ${reader}` } }).then((r) => r.text());
        expect(text).toMatch(/^baton_queue_depth\{agent="slow"\} 2$/m);
        expect(text).toMatch(/^baton_tasks_running\{agent="slow"\} 1$/m);
      } finally {
        await small.close();
      }
    });
  });
});

describe('the OpenAPI document', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('memory');
  });
  afterAll(async () => h.close());

  test('documents every route with the very schemas that validate it', async () => {
    const doc = (await api(h.url, 'GET', '/openapi.json')).body as { openapi: string; paths: Record<string, Record<string, { operationId: string; requestBody?: { content: { 'application/json': { schema: unknown } } }; parameters?: { name: string; in: string; schema: unknown }[] }>> };
    expect(doc.openapi).toBe('3.1.0');
    for (const r of ROUTES) {
      const op = doc.paths[r.path]?.[r.method];
      expect(op?.operationId).toBe(r.operationId);
      if (r.body) expect(op!.requestBody!.content['application/json'].schema).toEqual(r.body);
      for (const [name, schema] of Object.entries((r.query?.['properties'] ?? {}) as Record<string, unknown>)) expect(op!.parameters!.find((p) => p.name === name && p.in === 'query')?.schema).toEqual(schema);
      for (const [name, schema] of Object.entries(r.params ?? {})) expect(op!.parameters!.find((p) => p.name === name && p.in === 'path')?.schema).toEqual(schema);
      // a store that does not answer is a 503 on every route behind a key (as /health's)
      if (r.action !== 'public') expect(Object.keys((op as unknown as { responses: object }).responses)).toContain('503');
    }
    // and a field the document does not list is refused
    const startBody = ROUTES.find((r) => r.operationId === 'startRun')!.body!;
    expect(Object.keys(startBody['properties'] as object)).not.toContain('priority');
  });
});
