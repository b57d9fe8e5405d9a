/**
 * Every code block of README.md runs, or says why not:
 * - ```sh: each `npx baton ...` line runs through `run(argv, io)` in a fresh directory holding the
 *   repository's `examples/` and `test/` (as a clone has them) and exits as its comment says
 *   (`(exit N)`, else 0); `npm ...` lines must name a script of package.json (they are how the
 *   tests themselves run, so they are checked, not run); any other line fails this test.
 * - ```ts: type-checked with the project's strict options (the package imported by its name, as a
 *   user does) and run.
 * - ```text: not run. A text block that shows a diagnostic must match what `baton validate` prints.
 * Any other fence fails this test, and so does a relative link to a file that does not exist.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';

const root = join(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; scripts: Record<string, string> };

interface Block {
  lang: string;
  body: string;
  line: number;
}

const blocks: Block[] = [...readme.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!.trim(), body: m[2]!, line: readme.slice(0, m.index).split('\n').length }));

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

const shellLines = blocks.filter((b) => b.lang === 'sh').flatMap((b) => b.body.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#')));

describe('README code blocks', () => {
  test('every block is sh, ts or text', () => {
    expect(blocks.length).toBeGreaterThan(5);
    expect(blocks.filter((b) => !['sh', 'ts', 'text'].includes(b.lang)).map((b) => `line ${b.line}: \`\`\`${b.lang}`)).toEqual([]);
  });

  test('shell lines are baton commands or npm scripts', () => {
    const other = shellLines.filter((l) => !l.startsWith('npx baton ') && !/^npm (install|ci|test|run \S+)\b/.test(l));
    expect(other).toEqual([]);
    for (const l of shellLines.filter((x) => x.startsWith('npm run '))) expect(Object.keys(pkg.scripts), l).toContain(words(l)[2]);
    expect(pkg.scripts['test']).toBeDefined();
  });

  test('each `npx baton` line runs as written from a clone, with the exit code its comment gives', async () => {
    const commands = shellLines.filter((l) => l.startsWith('npx baton '));
    expect(commands.length).toBeGreaterThan(8);
    const clone = mkdtempSync(join(tmpdir(), 'baton-readme-'));
    for (const d of ['examples', 'test']) symlinkSync(join(root, d), join(clone, d));
    for (const line of commands) {
      const argv = expandGlobs(words(line).slice(2), clone);
      let out = '';
      let err = '';
      const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: clone, env: { BATON_STORE: join(clone, '.baton', 'readme.db') } };
      const code = await run(argv, io);
      const expected = Number(/\(exit (\d)\)/.exec(line)?.[1] ?? 0);
      expect(code, `${line}\n${err}`).toBe(expected);
      if (argv.includes('--json')) expect(() => JSON.parse(out) as unknown, line).not.toThrow();
      if (argv.includes('sarif')) expect((JSON.parse(out) as { version: string }).version).toBe('2.1.0');
      expect(err, line).not.toMatch(/\n\s+at /);
    }
  }, 120_000);

  test('a diagnostic shown in a text block is what `baton validate` prints', async () => {
    const shown = blocks.filter((b) => b.lang === 'text' && /^\S+:\d+:\d+: (error|warning)\[/.test(b.body));
    expect(shown.length).toBeGreaterThan(0);
    for (const b of shown) {
      const file = /^(\S+?):\d+/.exec(b.body)![1]!;
      let out = '';
      await run(['validate', file], { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: root, env: {} });
      for (const line of b.body.trimEnd().split('\n')) expect(out.split('\n'), `README line ${b.line}`).toContain(line);
    }
  });

  const ts = blocks.filter((b) => b.lang === 'ts');

  test('TypeScript blocks type-check with the strict options of this project', () => {
    expect(ts.length).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), 'baton-readme-ts-'));
    const files = ts.map((b, i) => {
      const f = join(dir, `block-${i}.mts`);
      writeFileSync(f, b.body);
      return f;
    });
    const base = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    const index = [join(root, 'src', 'index.ts')];
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...base.compilerOptions, rootDir: '/', noEmit: true, typeRoots: [join(root, 'node_modules', '@types')], paths: { [pkg.name]: index, baton: index } }, files }));
    const r = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 180_000);

  test('TypeScript blocks run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-readme-run-'));
    const logged: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(' ')));
    try {
      for (const [i, b] of ts.entries()) {
        const f = join(dir, `block-${i}.mts`);
        writeFileSync(f, b.body);
        await expect(import(f), `README line ${b.line}`).resolves.toBeDefined();
      }
    } finally {
      spy.mockRestore();
    }
    // what the library snippet says it prints: two completed runs, then the output check's error class
    expect(logged.filter((l) => l === 'completed')).toHaveLength(2);
    expect(logged).toContain('OutputTypeMismatchError');
  }, 60_000);

  test('relative links point at files that exist', () => {
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(3);
    expect(links.filter((l) => !existsSync(join(root, l)))).toEqual([]);
  });
});
