/**
 * AIP-16 files of remote agents, against a real server on a loopback port over real stores: the
 * server's staged inputs fetched and outputs sent back through `/tasks/{token}/files/{key}`, by
 * createRemoteAgent (a body that reads and writes plain paths under its own root) and by hand (every
 * refusal), for a phase and for the items of a fan-out; the engine's sync and `task.file` records as
 * for an agent in process.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, type Engine, type RunStore } from '@baton-run/baton';
import { createServerApp, parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { baton, until } from '../helpers/spawn.js';
import { KEYS, KEYS_ENV, Latch, agents, api, openTestStore, type StoreKind, startRun, toEnd } from './harness.js';
import { eventsOf, readStream } from './sse.js';

const RKEY = 'remote-files-r-key-0123456789';
const OTHER = 'remote-files-other-key-01234';
const LEASE_MS = 1500;
const FILE_LIMIT = 4096;
const logged: string[] = [];

/** Phase `b` of the remote agent `r` reads `notes` and writes `summary` (and may write `extra`). */
const FILES = `openintent: "1.0"
info: {name: rfiles}
agents:
  r: {x-remote: true}
workflow:
  b:
    assign: r
    inputsFiles:
      notes: {path: notes.txt, contentType: text/plain}
    outputsFiles:
      summary: {path: "out/<runId>/summary.txt", contentType: text/plain}
      extra: {path: "out/<runId>/extra.bin"}
    outputs: {lines: number}
`;

/** Each item of a fan-out reads `in/<item>.txt` and writes `out/<runId>/<index>.txt`. */
const FAN = `openintent: "1.0"
info: {name: rfan}
agents:
  r: {x-remote: true}
workflow:
  each:
    assign: r
    for_each: $trigger.list
    inputs: {v: $item}
    inputsFiles:
      src: {path: "in/<item>.txt"}
    outputsFiles:
      dst: {path: "out/<runId>/<index>.txt"}
    outputs: {n: number}
`;

interface Served {
  url: string;
  dir: string;
  engine: Engine;
  store: RunStore;
  server: BatonServer;
  close(): Promise<void>;
}

async function serve(kind: StoreKind): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-rfiles-'));
  writeFileSync(join(dir, 'notes.txt'), 'one\ntwo\nthree\n');
  mkdirSync(join(dir, 'in'));
  for (const w of ['alpha', 'beta', 'gamma']) writeFileSync(join(dir, 'in', `${w}.txt`), `${w}!`);
  const { store, changes, drop } = await openTestStore(kind, dir);
  const remote = new RemoteAgents({ leaseMs: LEASE_MS });
  const engine = createEngine({ store, agents: agents(new Latch()), bindRun: remote.bindRun, concurrency: 16, leaseMs: 5000, onEvent: remote.onEvent });
  const server = await startServer({
    engine,
    port: 0,
    keys: parseKeysEnv(`${KEYS_ENV},rk:agent:r:${RKEY},ok:agent:other:${OTHER}`),
    remote,
    ...(changes ? { changes } : {}),
    cwd: dir,
    fileLimit: FILE_LIMIT,
    log: (line) => logged.push(line),
    graceMs: 100,
  });
  return {
    url: server.url,
    dir,
    engine,
    store,
    server,
    async close() {
      await server.close();
      await store.close();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const claim = (h: Served, key: string = RKEY) => api(h.url, 'POST', '/agents/r/claim?wait=10', { key });
const task = (h: Served, token: string, what: string, body: unknown = {}) => api(h.url, 'POST', `/tasks/${token}/${what}`, { key: RKEY, body });

async function getFile(h: Served, token: string, key: string, as: string = RKEY): Promise<{ status: number; type: string | null; bytes: Buffer; error?: { code: string } }> {
  const res = await fetch(`${h.url}/tasks/${token}/files/${key}`, { headers: { authorization: `Bearer ${as}` } });
  const bytes = Buffer.from(await res.arrayBuffer());
  const json = res.headers.get('content-type')?.startsWith('application/json') && res.status !== 200 ? (JSON.parse(bytes.toString()) as { error: { code: string } }) : undefined;
  return { status: res.status, type: res.headers.get('content-type'), bytes, ...(json ? { error: json.error } : {}) };
}

async function putFile(h: Served, token: string, key: string, bytes: Buffer | string, as: string = RKEY): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h.url}/tasks/${token}/files/${key}`, { method: 'PUT', headers: { authorization: `Bearer ${as}`, 'content-type': 'application/octet-stream' }, body: bytes });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

describe.each<StoreKind>(['memory', 'sqlite', 'postgres'])('remote agents with AIP-16 files over the %s store', (kind) => {
  let h: Served;
  beforeAll(async () => {
    h = await serve(kind);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  }, 60_000);

  test('createRemoteAgent: the body reads its input and writes its output under a root of its own; the workspace file is synced and recorded', async () => {
    const seen: { root: string; notes: string }[] = [];
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      // the same body as in process: plain paths under `_workflowFsRoot`
      handler: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        const notes = readFileSync(join(root, 'notes'), 'utf8');
        seen.push({ root, notes });
        writeFileSync(join(root, 'summary'), notes.toUpperCase());
        writeFileSync(join(root, 'scratch'), 'not declared: discarded');
        return { lines: notes.trim().split('\n').length };
      },
    });
    let id: string;
    try {
      id = await startRun(h, FILES, undefined, KEYS.admin);
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      expect(events.find((e) => e.type === 'task.completed' && e['phase'] === 'b')!['output']).toEqual({ lines: 3 });
      const files = events.filter((e) => e.type === 'task.file').map((e) => ({ direction: e['direction'], key: e['key'], path: e['path'], sha256: e['sha256'], size: e['size'] }));
      expect(files).toEqual([
        { direction: 'staged', key: 'notes', path: 'notes.txt', sha256: sha('one\ntwo\nthree\n'), size: 14 },
        { direction: 'synced', key: 'summary', path: `out/${id}/summary.txt`, sha256: sha('ONE\nTWO\nTHREE\n'), size: 14 },
      ]);
      // `extra` was declared and not written: a warning, and the run went on (AIP-16)
      expect(events.filter((e) => e.type === 'task.warning').map((e) => e['code'])).toEqual(['DeclaredFileMissing']);
      await until(() => existsSync(join(h.dir, 'out', id, 'summary.txt')), 10_000);
      expect(readFileSync(join(h.dir, 'out', id, 'summary.txt'), 'utf8')).toBe('ONE\nTWO\nTHREE\n');
    } finally {
      await agent.stop(0);
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]!.notes).toBe('one\ntwo\nthree\n');
    // the agent's root is its own (not the server's) and gone once the task ended
    expect(seen[0]!.root).toMatch(/baton-remote-files-/);
    expect(existsSync(seen[0]!.root)).toBe(false);
    expect(agent.completed).toBe(1);
  }, 60_000);

  test('by hand: the claim lists the files; inputs fetched, outputs sent; every refusal (a key not declared, too large, a path out of the root, another agent’s key)', async () => {
    const id = await startRun(h, FILES, undefined, KEYS.admin);
    const c = await claim(h);
    expect(c.status).toBe(200);
    expect(c.body['files']).toEqual({
      inputs: [{ key: 'notes', size: 14, sha256: sha('one\ntwo\nthree\n'), content_type: 'text/plain' }],
      outputs: [{ key: 'summary', content_type: 'text/plain' }, { key: 'extra' }],
    });
    const token = c.body['token'] as string;
    const got = await getFile(h, token, 'notes');
    expect(got).toMatchObject({ status: 200, type: 'text/plain' });
    expect(got.bytes.toString()).toBe('one\ntwo\nthree\n');
    // not declared; declared as output and not sent yet
    expect(await getFile(h, token, 'passwd')).toMatchObject({ status: 404, error: { code: 'unknown-file' } });
    expect(await getFile(h, token, 'summary')).toMatchObject({ status: 404, error: { code: 'file-not-found' } });
    // an input is not an output: not to be overwritten
    expect((await putFile(h, token, 'notes', 'x')).body['error']).toMatchObject({ code: 'unknown-file' });
    expect((await putFile(h, token, 'nope', 'x')).status).toBe(404);
    // out of the root: a key with a separator is refused by its form (400) before anything else; `..` and
    // `%2E%2E` are taken out of the path by URL parsing (no such route, 404)
    for (const k of ['..%2Fnotes.txt', '%2E%2E%2F%2E%2E%2Fetc%2Fpasswd', 'a%5Cb', '%2E%2E%5Cnotes.txt']) {
      expect((await putFile(h, token, k, 'escape')).body['error'], k).toMatchObject({ code: 'invalid-request' });
      expect(await getFile(h, token, k), k).toMatchObject({ status: 400, error: { code: 'invalid-request' } });
    }
    for (const k of ['..', '%2E%2E']) {
      expect((await putFile(h, token, k, 'escape')).status, k).toBe(404);
      expect((await getFile(h, token, k)).status, k).toBe(404);
    }
    expect(existsSync(join(h.dir, 'escape'))).toBe(false);
    // over the file limit (separate from the JSON body limit): 413, nothing written
    const big = await putFile(h, token, 'summary', Buffer.alloc(FILE_LIMIT + 1, 1));
    expect(big.status).toBe(413);
    expect(big.body['error']).toMatchObject({ code: 'file-too-large' });
    // without a Content-Length (chunked), counted as the bytes come
    const chunked = await fetch(`${h.url}/tasks/${token}/files/summary`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${RKEY}` },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new Uint8Array(FILE_LIMIT - 10));
          c.enqueue(new Uint8Array(20));
          c.close();
        },
      }),
      duplex: 'half',
    });
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { error: { code: string } }).error.code).toBe('file-too-large');
    expect((await getFile(h, token, 'summary')).status).toBe(404);
    expect(readdirSync((c.body['input'] as Record<string, string>)['_workflowFsRoot']!)).toEqual(['notes']);
    // roles: another agent's key, a reader's, none
    expect((await putFile(h, token, 'summary', 'x', OTHER)).status).toBe(403);
    expect((await getFile(h, token, 'notes', OTHER)).status).toBe(403);
    expect((await getFile(h, token, 'notes', KEYS.reader)).status).toBe(403);
    expect((await fetch(`${h.url}/tasks/${token}/files/notes`)).status).toBe(401);
    // an admin may; the agent's own key sends it again (the last bytes win)
    expect((await putFile(h, token, 'summary', 'first', KEYS.admin)).status).toBe(200);
    const put = await putFile(h, token, 'summary', 'written remotely\n');
    expect(put).toEqual({ status: 200, body: { key: 'summary', size: 17, sha256: sha('written remotely\n') } });
    expect((await getFile(h, token, 'summary')).bytes.toString()).toBe('written remotely\n');
    expect((await task(h, token, 'complete', { output: { lines: 1 } })).status).toBe(200);
    // the token ended: its files are refused as its other calls are
    expect((await getFile(h, token, 'notes')).status).toBe(409);
    expect((await putFile(h, token, 'summary', 'late')).body['error']).toMatchObject({ code: 'task-ended', status: 'completed' });
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    expect(events.filter((e) => e.type === 'task.file' && e['direction'] === 'synced').map((e) => [e['key'], e['sha256']])).toEqual([['summary', sha('written remotely\n')]]);
    await until(() => existsSync(join(h.dir, 'out', id, 'summary.txt')), 10_000);
    expect(readFileSync(join(h.dir, 'out', id, 'summary.txt'), 'utf8')).toBe('written remotely\n');
    // the run's artifacts, as `baton show --artifacts --json` lists them: the file staged and the one synced
    const listed = await api(h.url, 'GET', `/runs/${id}/artifacts?phase=b`, { key: KEYS.reader });
    expect(listed.body['artifacts']).toEqual([
      { run_id: id, phase: 'b', attempt: 1, item: null, key: 'notes', access: 'read', direction: 'staged', path: 'notes.txt', sha256: sha('one\ntwo\nthree\n'), size: 14 },
      { run_id: id, phase: 'b', attempt: 1, item: null, key: 'summary', access: 'written', direction: 'synced', path: `out/${id}/summary.txt`, sha256: sha('written remotely\n'), size: 17 },
    ]);
    // a phase the run does not have: 404, as /phases/{phase} answers, not an empty page
    expect(await api(h.url, 'GET', `/runs/${id}/artifacts?phase=nope`, { key: KEYS.reader })).toMatchObject({ status: 404, body: { error: { code: 'unknown-phase' } } });
  }, 60_000);

  test('a cut upload leaves nothing: neither the file nor a part of it', async () => {
    const id = await startRun(h, FILES, undefined, KEYS.admin);
    const c = await claim(h);
    const token = c.body['token'] as string;
    // the server's root (this test runs on its host): where the upload is written
    const root = (c.body['input'] as Record<string, string>)['_workflowFsRoot']!;
    const port = Number(new URL(h.url).port);
    const sock = connect(port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(`PUT /tasks/${token}/files/summary HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${RKEY}\r\nContent-Type: application/octet-stream\r\nContent-Length: 2000\r\n\r\n${'a'.repeat(500)}`);
    // the server is writing it beside the target: then the connection is cut
    await until(() => readdirSync(root).some((f) => f.startsWith('.baton-upload-')), 10_000);
    sock.destroy();
    await until(() => !readdirSync(root).some((f) => f.startsWith('.baton-upload-')), 10_000);
    expect(readdirSync(root).sort()).toEqual(['notes']);
    expect((await getFile(h, token, 'summary')).status).toBe(404);
    expect((await task(h, token, 'complete', { output: { lines: 0 } })).status).toBe(200);
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    expect(events.filter((e) => e.type === 'task.file' && e['direction'] === 'synced')).toEqual([]);
    expect(existsSync(join(h.dir, 'out', id))).toBe(false);
  }, 60_000);

  test('an old token after a takeover (its lease lost) is refused for files as for a completion; the new attempt has its own root', async () => {
    const id = await startRun(h, FILES, undefined, KEYS.admin);
    const first = await claim(h);
    const oldToken = first.body['token'] as string;
    expect((await putFile(h, oldToken, 'summary', 'from attempt 1')).status).toBe(200);
    // no heartbeat: handed back after the lease, parked again as attempt 2
    const second = await api(h.url, 'POST', '/agents/r/claim?wait=20', { key: RKEY });
    expect(second.body).toMatchObject({ run_id: id, attempt: 2 });
    const token = second.body['token'] as string;
    expect(await getFile(h, oldToken, 'notes')).toMatchObject({ status: 409, error: { code: 'task-ended' } });
    expect((await putFile(h, oldToken, 'summary', 'late')).body['error']).toMatchObject({ code: 'task-ended', status: 'lost' });
    // attempt 1's upload is not in attempt 2's root
    expect((await getFile(h, token, 'summary')).status).toBe(404);
    expect((await getFile(h, token, 'notes')).bytes.toString()).toBe('one\ntwo\nthree\n');
    expect((await putFile(h, token, 'summary', 'from attempt 2')).status).toBe(200);
    expect((await task(h, token, 'complete', { output: { lines: 2 } })).status).toBe(200);
    const { status } = await toEnd(h, id);
    expect(status).toBe('completed');
    await until(() => existsSync(join(h.dir, 'out', id, 'summary.txt')), 10_000);
    expect(readFileSync(join(h.dir, 'out', id, 'summary.txt'), 'utf8')).toBe('from attempt 2');
  }, 60_000);

  test('a fan-out whose items have files: each item fetches its own input and sends its own output (createRemoteAgent, two at once)', async () => {
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      concurrency: 2,
      handler: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        const text = readFileSync(join(root, 'src'), 'utf8');
        writeFileSync(join(root, 'dst'), `${ctx.item!.index}:${text}`);
        return { n: text.length };
      },
    });
    try {
      const id = await startRun(h, FAN, { list: ['alpha', 'beta', 'gamma'] }, KEYS.admin);
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      const synced = events.filter((e) => e.type === 'task.file' && e['direction'] === 'synced').map((e) => [e['item'], e['path']]);
      expect(synced.sort()).toEqual([[0, `out/${id}/0.txt`], [1, `out/${id}/1.txt`], [2, `out/${id}/2.txt`]]);
      expect(events.filter((e) => e.type === 'task.file' && e['direction'] === 'staged').map((e) => [e['item'], e['path']]).sort()).toEqual([[0, 'in/alpha.txt'], [1, 'in/beta.txt'], [2, 'in/gamma.txt']]);
      await until(() => existsSync(join(h.dir, 'out', id, '2.txt')) && existsSync(join(h.dir, 'out', id, '0.txt')) && existsSync(join(h.dir, 'out', id, '1.txt')), 10_000);
      expect(['0', '1', '2'].map((i) => readFileSync(join(h.dir, 'out', id, `${i}.txt`), 'utf8'))).toEqual(['0:alpha!', '1:beta!', '2:gamma!']);
    } finally {
      await agent.stop(0);
    }
  }, 60_000);
});

describe('the file routes without a socket (createServerApp, a web Request)', () => {
  test('a PUT read from the web body stream, limit and all; the GET streams the file back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-rfiles-app-'));
    writeFileSync(join(dir, 'notes.txt'), 'in memory\n');
    const { store, drop } = await openTestStore('memory', dir);
    const remote = new RemoteAgents({ leaseMs: 10_000 });
    const engine = createEngine({ store, agents: {}, bindRun: remote.bindRun, onEvent: remote.onEvent });
    const built = await createServerApp({ engine, keys: parseKeysEnv(`root:admin:${KEYS.admin},rk:agent:r:${RKEY}`), remote, cwd: dir, fileLimit: 16, log: (l) => logged.push(l) });
    const worker = new AbortController();
    const serving = engine.serve(worker.signal);
    const auth = { authorization: `Bearer ${RKEY}` };
    try {
      const started = await built.app.request('/runs', { method: 'POST', headers: { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: FILES }) });
      expect(started.status).toBe(201);
      const c = await built.app.request('/agents/r/claim?wait=10', { method: 'POST', headers: auth });
      const token = ((await c.json()) as { token: string }).token;
      const got = await built.app.request(`/tasks/${token}/files/notes`, { headers: auth });
      expect(await got.text()).toBe('in memory\n');
      expect((await built.app.request(`/tasks/${token}/files/summary`, { method: 'PUT', headers: auth, body: 'x'.repeat(17) })).status).toBe(413);
      const put = await built.app.request(`/tasks/${token}/files/summary`, { method: 'PUT', headers: auth, body: 'sixteen bytes ok' });
      expect(await put.json()).toEqual({ key: 'summary', size: 16, sha256: sha('sixteen bytes ok') });
      expect(await (await built.app.request(`/tasks/${token}/files/summary`, { headers: auth })).text()).toBe('sixteen bytes ok');
    } finally {
      built.close();
      worker.abort();
      await engine.stop(0);
      await serving.catch(() => undefined);
      await store.close();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('createRemoteAgent and files the server refuses', () => {
  test('an output over the server’s file limit is not sent, a line in the task’s log says why, and the completion goes on; a failing body’s root is removed too', async () => {
    const h = await serve('memory');
    const roots: string[] = [];
    let calls = 0;
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      handler: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        roots.push(root);
        if (calls++ === 0) throw Object.assign(new Error('not this time'), { code: 'Flaky' });
        writeFileSync(join(root, 'summary'), Buffer.alloc(FILE_LIMIT + 1, 7));
        writeFileSync(join(root, 'extra'), 'small');
        return { lines: 0 };
      },
    });
    try {
      const id = await startRun(h, FILES.replace('outputs: {lines: number}', 'outputs: {lines: number}\n    retry: {max_attempts: 2}'), undefined, KEYS.admin);
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      expect(events.filter((e) => e.type === 'task.attempt_failed').map((e) => (e['failure'] as { code: string }).code)).toEqual(['Flaky']);
      expect(events.filter((e) => e.type === 'task.log').map((e) => e['message'])).toEqual([expect.stringMatching(/^warning: output file `summary` could not be sent: HTTP 413 .*file-too-large/)]);
      expect(events.filter((e) => e.type === 'task.file' && e['direction'] === 'synced').map((e) => e['key'])).toEqual(['extra']);
      expect(events.filter((e) => e.type === 'task.warning').map((e) => [e['code'], (e['details'] as { key: string }).key])).toEqual([['DeclaredFileMissing', 'summary']]);
    } finally {
      await agent.stop(0);
      await h.close();
    }
    expect(roots).toHaveLength(2);
    expect(roots.filter((r) => existsSync(r))).toEqual([]);
  }, 60_000);
});

/** What examples/remote-python/agent.py does with files: reads `notes`, writes `summary`. */
const PY = `openintent: "1.0"
info: {name: rfiles-py}
agents:
  r: {x-remote: true}
workflow:
  b:
    assign: r
    inputsFiles:
      notes: {path: notes.txt}
    outputsFiles:
      summary: {path: "out/<runId>/py.txt"}
    outputs: {m: string}
`;

const python = spawnSync('python3', ['--version']).status === 0;

describe.skipIf(!python)('the Python example with files (standard library only)', () => {
  test('agent.py fetches the input into a root of its own, writes its output there and sends it back; the workspace file is synced', async () => {
    const h = await serve('sqlite');
    const roots = (): string[] => readdirSync(tmpdir()).filter((f) => f.startsWith('baton-remote-files-'));
    const before = new Set(roots());
    const script = resolve(import.meta.dirname, '../../examples/remote-python/agent.py');
    const child = spawn('python3', [script, '--once'], { env: { ...process.env, BATON_URL: h.url, BATON_API_KEY: RKEY, BATON_AGENT: 'r' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const id = await startRun(h, PY, undefined, KEYS.admin);
      const { status, events } = await toEnd(h, id);
      expect(status, err).toBe('completed');
      expect(events.find((e) => e.type === 'task.completed')!['output']).toEqual({ m: 'python saw n=None and 3 lines' });
      expect(events.filter((e) => e.type === 'task.file').map((e) => [e['direction'], e['key'], e['path']])).toEqual([
        ['staged', 'notes', 'notes.txt'],
        ['synced', 'summary', `out/${id}/py.txt`],
      ]);
      await until(() => existsSync(join(h.dir, 'out', id, 'py.txt')), 10_000);
      expect(readFileSync(join(h.dir, 'out', id, 'py.txt'), 'utf8')).toBe('python read 3 lines\n');
      expect(await exited, err).toBe(0);
      // its own root is gone
      expect(roots().filter((f) => !before.has(f))).toEqual([]);
    } finally {
      child.kill();
      await h.close();
    }
  }, 60_000);
});

describe('baton serve --file-limit as a process', () => {
  test('a registered workflow with files, done by createRemoteAgent: an output under the limit synced, one over it not sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-rfiles-serve-'));
    writeFileSync(join(dir, 'rfiles.yaml'), FILES);
    writeFileSync(join(dir, 'notes.txt'), 'one\ntwo\nthree\n');
    const port = await freePort();
    const server = baton(['serve', '--port', String(port), '--store', 'memory', '--workflows', '.', '--file-limit', '10'], { cwd: dir, env: { BATON_API_KEYS: `${KEYS_ENV},rk:agent:r:${RKEY}` } });
    let err = '';
    server.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const agent = createRemoteAgent({
      url: `http://127.0.0.1:${port}`,
      key: RKEY,
      agent: 'r',
      waitS: 1,
      onError: () => undefined,
      handler: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        writeFileSync(join(root, 'summary'), readFileSync(join(root, 'notes')));
        writeFileSync(join(root, 'extra'), 'small');
        return { lines: 3 };
      },
    });
    try {
      await until(() => /listening on/.test(err), 30_000);
      const url = `http://127.0.0.1:${port}`;
      const started = await api(url, 'POST', '/runs', { key: KEYS.operator, body: { workflow_name: 'rfiles', run_id: 'served-files' } });
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      const s = await readStream(`${url}/runs/served-files/events`, { key: KEYS.reader, timeoutMs: 30_000 });
      const events = eventsOf(s.messages);
      expect(events.at(-1)?.type).toBe('run.completed');
      expect(events.filter((e) => e.type === 'task.file').map((e) => [e['direction'], e['key']])).toEqual([['staged', 'notes'], ['synced', 'extra']]);
      expect(events.filter((e) => e.type === 'task.log').map((e) => e['message'])).toEqual([expect.stringContaining('HTTP 413')]);
      await until(() => existsSync(join(dir, 'out', 'served-files', 'extra.bin')), 10_000);
      expect(readFileSync(join(dir, 'out', 'served-files', 'extra.bin'), 'utf8')).toBe('small');
    } finally {
      await agent.stop(0);
      server.kill('SIGTERM');
      await server.done;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

describe('the file routes in /openapi.json', () => {
  test('GET and PUT /tasks/{token}/files/{key}: raw bytes both ways, an agent’s action', async () => {
    const h = await serve('memory');
    try {
      const doc = (await api(h.url, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { operationId: string; 'x-baton-action': string; requestBody?: { content: Record<string, unknown> }; responses: Record<string, { content?: Record<string, unknown> }> }>> };
      const p = doc.paths['/tasks/{token}/files/{key}']!;
      expect(p['get']).toMatchObject({ operationId: 'getTaskFile', 'x-baton-action': 'agent' });
      expect(Object.keys(p['get']!.responses['200']!.content!)).toEqual(['application/octet-stream']);
      expect(p['put']).toMatchObject({ operationId: 'putTaskFile', 'x-baton-action': 'agent' });
      expect(Object.keys(p['put']!.requestBody!.content)).toEqual(['application/octet-stream']);
      expect(Object.keys(p['put']!.responses)).toEqual(expect.arrayContaining(['200', '404', '409', '413']));
      // a method the path does not take
      expect((await api(h.url, 'POST', '/tasks/rt_AAAAAAAAAAAAAAAAAAAAAAAA/files/x', { key: RKEY, body: {} })).status).toBe(405);
    } finally {
      await h.close();
    }
  }, 60_000);
});

afterAll(() => {
  expect(logged).toEqual([]);
});
