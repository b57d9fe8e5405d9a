/**
 * A posted workflow's LLM block may not point the server's provider key elsewhere: `llm.x-base_url`
 * would send OPENAI_API_KEY (or ANTHROPIC_API_KEY) from the server's environment to the URL the text
 * names, and `x-replies: FILE` reads a file on the server. Both are for admin keys only, as `x-command`
 * and `x-contract: FILE` are. A real server on a loopback port (SQLite), and a loopback listener
 * standing for the host the key would go to.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { KEYS, api, startHarness, type Harness } from './harness.js';

let h: Harness;
let listener: Server;
let url: string;
const seen: string[] = [];

beforeAll(async () => {
  h = await startHarness('sqlite');
  listener = createServer((req, res) => {
    seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
    res.writeHead(500).end('{}');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/v1`;
}, 60_000);

afterAll(async () => {
  await h?.close();
  await new Promise((r) => listener?.close(r));
});

const llm = (block: string): string => `openintent: "1.0"
info: {name: posted-llm}
llm: ${block}
agents:
  w:
    prompt: "say hi"
    output_schema: {type: object}
workflow:
  p: {assign: w, outputs: {n: number}}
`;

test('llm.x-base_url and x-replies in a posted text are 403 for an operator (start and validate); nothing is created or called', async () => {
  const before = (await h.store.runs({ limit: 1000 })).length;
  for (const [wf, what] of [
    [llm(`{provider: openai, x-base_url: "${url}"}`), /llm\.x-base_url \(sends the server's provider key to a URL\)/],
    [llm(`{provider: anthropic, x-base_url: "${url}"}`), /llm\.x-base_url/],
    [llm('{provider: scripted, x-replies: /etc/passwd}'), /llm\.x-replies \(reads a file\)/],
  ] as const) {
    const start = await api(h.url, 'POST', '/runs', { key: KEYS.operator, body: { workflow: wf } });
    expect(start.status, wf).toBe(403);
    expect(start.body).toMatchObject({ error: { code: 'forbidden' } });
    expect((start.body['error'] as { message: string }).message).toMatch(what);
    expect((await api(h.url, 'POST', '/workflows/validate', { key: KEYS.reader, body: { workflow: wf } })).status).toBe(403);
  }
  expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
  expect(seen).toEqual([]);
  // a provider without a URL of the text's own (the server's configuration decides where its key goes) is not refused for it
  const plain = await api(h.url, 'POST', '/workflows/validate', { key: KEYS.reader, body: { workflow: llm('{provider: openai, model: gpt-5.2}') } });
  expect(plain.status).toBe(200);
  // an admin may
  const admin = await api(h.url, 'POST', '/workflows/validate', { key: KEYS.admin, body: { workflow: llm(`{provider: openai, x-base_url: "${url}"}`) } });
  expect(admin.status).toBe(200);
});
