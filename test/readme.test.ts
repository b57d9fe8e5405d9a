/**
 * Every `npx baton ...` command of README.md runs as written from a clone: each is run through
 * `run(argv, io)` in a fresh directory holding the repository's `examples/` and `test/` (as a clone
 * has them), and must not end in a usage error. Commands on the deliberately broken example exit 1.
 */
import { mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** Shell words of a command line: quotes, a trailing comment and an output redirection handled. */
function words(line: string): string[] {
  const out: string[] = [];
  let cur: string | undefined;
  let q: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (q) {
      if (c === q) q = undefined;
      else cur = (cur ?? '') + c;
    } else if (c === '"' || c === "'") {
      q = c;
      cur ??= '';
    } else if (c === ' ') {
      if (cur !== undefined) out.push(cur);
      cur = undefined;
    } else if (c === '#' && cur === undefined) break;
    else cur = (cur ?? '') + c;
  }
  if (cur !== undefined) out.push(cur);
  const redirect = out.indexOf('>');
  return redirect >= 0 ? out.slice(0, redirect) : out;
}

function expandGlobs(args: string[], cwd: string): string[] {
  return args.flatMap((a) => {
    if (!a.includes('*')) return [a];
    const dir = dirname(a);
    const re = new RegExp(`^${a.slice(dir.length + 1).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    return readdirSync(join(cwd, dir)).filter((f) => re.test(f)).sort().map((f) => `${dir}/${f}`);
  });
}

const commands = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n')).filter((l) => l.startsWith('npx baton '));

describe('README commands', () => {
  test('there are commands to check', () => {
    expect(commands.length).toBeGreaterThan(8);
  });

  test('each runs as written from a clone', async () => {
    const clone = mkdtempSync(join(tmpdir(), 'baton-readme-'));
    for (const d of ['examples', 'test']) symlinkSync(join(root, d), join(clone, d));
    for (const line of commands) {
      const argv = expandGlobs(words(line).slice(2), clone);
      let err = '';
      const io: CliIo = { stdout: () => undefined, stderr: (s) => void (err += s), isTTY: false, cwd: clone, env: {} };
      const code = await run(argv, io);
      expect(code, `${line}\n${err}`).toBe(line.includes('broken.yaml') ? 1 : 0);
    }
  }, 60_000);
});
