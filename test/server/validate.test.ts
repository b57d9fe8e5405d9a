/**
 * `POST /workflows/validate` answers the very document `baton validate --json` prints, file for file:
 * a 1.0 workflow, one in the contract spec's step form, and invalid ones of both forms. A real server on
 * a loopback port; the CLI run in process in the server's working directory.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { run as cli } from '../../src/cli/main.js';
import { CHAIN, KEYS, api, startHarness, type Harness } from './harness.js';

const STEPS = `workflow:
  name: tiny-steps
  version: "1.0.0"
  steps:
    - id: a
      agent: x
      outputs:
        doc: { $store: "artifacts.doc" }
`;
const BROKEN = `openintent: "1.0"
info: {name: broken}
workflow:
  a: {assign: x, depends_on: [nope], outputs: {n: numbr}}
`;

let h: Harness;
beforeAll(async () => {
  h = await startHarness('memory');
  writeFileSync(join(h.dir, 'chain.yaml'), CHAIN);
  writeFileSync(join(h.dir, 'steps.yaml'), STEPS);
  writeFileSync(join(h.dir, 'broken.yaml'), BROKEN);
  copyFileSync(join(import.meta.dirname, '..', 'fixtures', 'diagnostics', 'steps-form.yaml'), join(h.dir, 'steps-broken.yaml'));
}, 30_000);
afterAll(async () => {
  await h?.close();
});

async function cliDocument(file: string): Promise<{ code: number; doc: { files: Record<string, unknown>[] } }> {
  let out = '';
  const code = await cli(['validate', file, '--json'], { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: h.dir, env: {} });
  return { code, doc: JSON.parse(out) as { files: Record<string, unknown>[] } };
}

describe('POST /workflows/validate and baton validate --json', () => {
  test.each([
    ['chain.yaml', 'openintent', true],
    ['steps.yaml', 'steps', true],
    ['broken.yaml', 'openintent', false],
    ['steps-broken.yaml', 'steps', false],
  ])('%s: the same document, `form` included', async (file, form, valid) => {
    const local = await cliDocument(file);
    expect(local.code).toBe(valid ? 0 : 1);
    const remote = await api(h.url, 'POST', '/workflows/validate', { key: KEYS.reader, body: { workflow: readFileSync(join(h.dir, file), 'utf8'), file } });
    expect(remote.status).toBe(200);
    expect(remote.body).toEqual(local.doc);
    const entry = (remote.body['files'] as Record<string, unknown>[])[0]!;
    expect(entry).toMatchObject({ file, form, valid });
    expect(Object.keys(entry).sort()).toEqual(['diagnostics', 'file', 'form', 'valid']);
    if (!valid) expect((entry['diagnostics'] as unknown[]).length).toBeGreaterThan(0);
  });
});
