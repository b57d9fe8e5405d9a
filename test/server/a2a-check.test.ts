/**
 * `baton check` reads the agent card of every `x-a2a` agent (an @a2a-js/sdk server on a loopback
 * port) and checks its skill and modes: positioned diagnostics, and a clear warning when it cannot.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { startA2aPeer, type A2aPeer } from '../helpers/a2a-peer.js';

let dir: string;
let good: A2aPeer;
let textOnly: A2aPeer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-a2a-check-'));
  good = await startA2aPeer({
    skills: [
      { id: 'answer' },
      { id: 'images', inputModes: ['image/png'] },
      { id: 'params', inputModes: ['application/json; charset=utf-8'], outputModes: ['application/vnd.acme.result+json'] },
      { id: 'textish', outputModes: ['text/plain; charset=utf-8'] },
    ],
  });
  textOnly = await startA2aPeer({ defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'] });
});
afterAll(async () => {
  await good.close();
  await textOnly.close();
  rmSync(dir, { recursive: true, force: true });
});

const flow = (a2a: string): string => `openintent: "1.0"
info: {name: checked}
agents:
  peer:
    x-a2a: ${a2a}
workflow:
  ask:
    assign: peer
    outputs: {answer: string}
`;

async function check(text: string): Promise<{ code: number; diagnostics: { code: string; severity: string; path: string; line?: number; column?: number; message: string }[] }> {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  let out = '';
  const io: CliIo = { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: dir, env: {} };
  const code = await run(['check', file, '--json'], io);
  const body = JSON.parse(out) as { diagnostics: { code: string; severity: string; path: string; line?: number; column?: number; message: string }[] };
  return { code, diagnostics: body.diagnostics.filter((d) => d.code.startsWith('a2a-')) };
}

describe('baton check reads x-a2a agent cards', () => {
  test('a card with the skill and JSON modes: no finding', async () => {
    const r = await check(flow(`{url: "${good.url}", skill: answer}`));
    expect(r.diagnostics).toEqual([]);
    expect(r.code).toBe(0);
  });

  test('an unknown skill is an error at x-a2a.skill, with the card\'s skills', async () => {
    const r = await check(flow(`{url: "${good.url}", skill: answr}`));
    expect(r.code).toBe(1);
    expect(r.diagnostics).toEqual([expect.objectContaining({ code: 'a2a-unknown-skill', severity: 'error', path: 'agents.peer.x-a2a.skill', line: 5 })]);
  });

  test('a skill that takes no JSON is an error; a card that gives text only is a warning', async () => {
    const r = await check(flow(`{url: "${good.url}", skill: images}`));
    expect(r.diagnostics).toEqual([expect.objectContaining({ code: 'a2a-mode-mismatch', severity: 'error', path: 'agents.peer.x-a2a.skill' })]);
    const t = await check(flow(`{url: "${textOnly.url}"}`));
    expect(t.diagnostics.map((d) => [d.code, d.severity, d.path])).toEqual([
      ['a2a-mode-mismatch', 'error', 'agents.peer.x-a2a.url'],
      ['a2a-mode-mismatch', 'warning', 'agents.peer.x-a2a.url'],
    ]);
  });

  test('a media type with parameters or a +json suffix is JSON; text/plain with a charset is text', async () => {
    const r = await check(flow(`{url: "${good.url}", skill: params}`));
    expect(r.diagnostics).toEqual([]);
    expect(r.code).toBe(0);
    const t = await check(flow(`{url: "${good.url}", skill: textish}`));
    expect(t.diagnostics.map((d) => [d.code, d.severity, d.path])).toEqual([['a2a-mode-mismatch', 'warning', 'agents.peer.x-a2a.skill']]);
  });

  test('an unreachable card is a warning at x-a2a.url, not a crash', async () => {
    const p = await startA2aPeer();
    const url = p.url;
    await p.close();
    const r = await check(flow(`{url: "${url}"}`));
    expect(r.code).toBe(0);
    expect(r.diagnostics).toEqual([expect.objectContaining({ code: 'a2a-card-unreachable', severity: 'warning', path: 'agents.peer.x-a2a.url' })]);
  });

  test('a URL that is not http(s) is an error from the workflow itself', async () => {
    let out = '';
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, flow('{url: "ftp://example.com"}'));
    const code = await run(['validate', file, '--json'], { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: dir, env: {} });
    expect(code).toBe(1);
    expect(out).toContain('"code": "invalid-value"');
    expect(out).toContain('x-a2a.url');
  });
});
