/**
 * The package as a user gets it: `npm pack`, the tarball installed into a scratch project whose
 * tsconfig is strict (with exactOptionalPropertyTypes and noUncheckedIndexedAccess) and `skipLibCheck: false`, `baton types` run by the installed bin, a program
 * using the public API (loadWorkflow narrowing, createEngine<Workflow>, defineHandlers, defineAgent,
 * the run handle with `for await`, `await using`) type-checked and run, and the same program with a
 * misspelled agent id refused by tsc. The package name comes from package.json, as users import it.
 *
 * It runs the program on this Node and on every binary BATON_CONSUMER_NODES names (paths separated by
 * `:`), e.g. Node 22 and 24 (docs/api.md says how to get them). It is skipped only when npm itself
 * cannot pack or install for an environmental reason (no npm, no registry), and says why.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'consumer');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; bin: Record<string, string>; devDependencies: Record<string, string> };
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const EXTRA_NODES = (process.env['BATON_CONSUMER_NODES'] ?? '').split(delimiter).filter((p) => p !== '');

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why the process could not run or was killed (`ENOENT`, a timeout). */
  error?: string;
}

function run(file: string, args: string[], cwd: string, timeoutMs = 240_000): Promise<Ran> {
  return new Promise((done) => {
    // npm_config_* from an enclosing `npm test` would point the scratch install at this repository
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_(config|package|lifecycle)_/i.test(k)));
    execFile(file, args, { cwd, env: { ...env, NO_COLOR: '1' }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      done({ code, stdout, stderr, ...(error && typeof error.code !== 'number' ? { error: String(error.code ?? error.signal ?? error.message) } : {}) });
    });
  });
}

/** npm could not run or reach the registry: the environment, not the package. */
function environmental(r: Ran): string | undefined {
  if (r.error === 'ENOENT') return 'npm is not on PATH';
  const m = /\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOSPC|EACCES)\b/.exec(r.stderr);
  return m ? `npm failed with ${m[1]}` : undefined;
}

const PROGRAM = readFileSync(join(FIXTURE, 'program.ts.txt'), 'utf8').replaceAll('PACKAGE', PKG.name);
const BAD = PROGRAM.replace('\n    drafter,\n', '\n    drafterr: drafter,\n');
const BAD_AT = `${BAD.split('\n').findIndex((l) => l.includes('drafterr')) + 1},5`;

/** A program of the server subpath: a server with keys and remote agents, started and closed. */
const SERVER_PROGRAM = `import { createEngine, MemoryStore } from 'PACKAGE';
import { loadA2aServer, parseKeysEnv, RemoteAgents, startServer, type BatonServer } from 'PACKAGE/server';
const remote = new RemoteAgents({ agents: ['q'] });
const engine = createEngine({ store: new MemoryStore(), bindRun: remote.bindRun, onEvent: remote.onEvent });
const server: BatonServer = await startServer({ engine, port: 0, keys: parseKeysEnv('ops:operator:0123456789abcdef0123'), remote, cwd: '.' });
// A2A stays optional: the loader's type is opaque
const load: typeof loadA2aServer | undefined = process.env['A2A'] ? loadA2aServer : undefined;
console.log(server.url, typeof load);
await server.close();
`.replaceAll('PACKAGE', PKG.name);

/** Every subpath whose peers the scratch project has (a2a needs its optional SDK), for the other module resolutions. */
const SUBPATHS_PROGRAM = `import { createEngine, MemoryStore } from 'PACKAGE';
import { openPostgresStore } from 'PACKAGE/postgres';
import { startServer } from 'PACKAGE/server';
import { llmAgent } from 'PACKAGE/llm';
import { McpHost } from 'PACKAGE/mcp';
import { loadAgentsModule } from 'PACKAGE/typescript';
import { createOtelTelemetry } from 'PACKAGE/otel';
console.log(typeof createEngine, typeof MemoryStore, typeof openPostgresStore, typeof startServer, typeof llmAgent, typeof McpHost, typeof loadAgentsModule, typeof createOtelTelemetry);
`.replaceAll('PACKAGE', PKG.name);

let dir = '';
let skipped: string | undefined;
let tsc: Ran;

beforeAll(async () => {
  expect(BAD).not.toBe(PROGRAM);
  dir = mkdtempSync(join(tmpdir(), 'baton-consumer-'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], ROOT);
  if (packed.code !== 0) {
    skipped = environmental(packed);
    if (skipped) return;
    throw new Error(`npm pack failed:\n${packed.stderr}`);
  }
  const tarball = join(dir, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
  const app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', outDir: 'out', types: ['node'] }, include: ['*.ts'] }, null, 2),
  );
  copyFileSync(join(FIXTURE, 'workflow.yaml'), join(app, 'workflow.yaml'));
  writeFileSync(join(app, 'good.ts'), PROGRAM);
  writeFileSync(join(app, 'bad.ts'), BAD);
  // the server subpath with its own peers (hono) and without the optional A2A SDK: its types must not need it
  writeFileSync(join(app, 'server.ts'), SERVER_PROGRAM);
  // kept out of the nodenext project (its include is *.ts): checked alone under other resolutions
  mkdirSync(join(app, 'resolutions'));
  writeFileSync(join(app, 'resolutions', 'subpaths.ts'), SUBPATHS_PROGRAM);
  // --ignore-scripts: what pnpm does by default; the program uses the memory store, no native build needed
  const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball, `@types/node@${PKG.devDependencies['@types/node']}`, `hono@${PKG.devDependencies['hono']}`, `@hono/node-server@${PKG.devDependencies['@hono/node-server']}`], app);
  if (installed.code !== 0) {
    skipped = environmental(installed);
    if (skipped) return;
    throw new Error(`npm install failed:\n${installed.stderr}`);
  }
  const bin = join(app, 'node_modules', PKG.name, PKG.bin['baton']!);
  const types = await run(process.execPath, [bin, 'types', 'workflow.yaml', '-o', 'workflow.types.ts'], app);
  expect(types.stderr).toBe('');
  tsc = await run(process.execPath, [TSC, '-p', '.', '--pretty', 'false'], app);
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `file(line,col): error TSnnnn` lines of tsc's output. */
function errors(out: string): string[] {
  return [...out.matchAll(/^(\S+)\((\d+),(\d+)\): error (TS\d+)/gm)].map((m) => `${m[1]}:${m[2]},${m[3]} ${m[4]}`);
}

describe(`the packed package in a strict consumer project`, () => {
  test('the published types and the program type-check with skipLibCheck: false; a misspelled agent id does not', (ctx) => {
    if (skipped) ctx.skip(`skipped: ${skipped}`);
    // exactly one error, in bad.ts at the misspelled id (defineHandlers: "`drafterr` is not an agent of this workflow"); none in any
    // .d.ts (the server subpath's included, without @a2a-js/sdk installed), none in server.ts
    expect(errors(tsc.stdout), tsc.stdout).toEqual([`bad.ts:${BAD_AT} TS2322`]);
  });

  test('the server program (hono installed, the A2A SDK not) starts and closes a server', async (ctx) => {
    if (skipped) ctx.skip(`skipped: ${skipped}`);
    const r = await run(process.execPath, [join(dir, 'app', 'out', 'server.js')], join(dir, 'app'), 60_000);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:\d+ undefined$/);
  });

  test('a bundled example that writes files runs from a copy in the working directory, never inside node_modules', async (ctx) => {
    if (skipped) ctx.skip(`skipped: ${skipped}`);
    const app = join(dir, 'app');
    const bin = join(app, 'node_modules', PKG.name, PKG.bin['baton']!);
    const installed = join(app, 'node_modules', PKG.name, 'examples', 'draft-sections');
    const r = await run(process.execPath, [bin, 'run', 'draft-sections', '--store', 'memory', '--quiet'], app, 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('copied it to ./draft-sections');
    const runs = readdirSync(join(app, 'draft-sections', 'out'));
    expect(runs).toHaveLength(1);
    expect(readFileSync(join(app, 'draft-sections', 'out', runs[0]!, 'paper.md'), 'utf8')).toContain('#');
    expect(existsSync(join(installed, 'out'))).toBe(false);
    // the second time the copy is the workflow: nothing is copied again
    const again = await run(process.execPath, [bin, 'run', 'draft-sections', '--store', 'memory', '--quiet'], app, 60_000);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('copied');
    expect(readdirSync(join(app, 'draft-sections', 'out'))).toHaveLength(2);
    // one that writes no files runs where it lies
    const plain = await run(process.execPath, [bin, 'run', 'research-pipeline', '--store', 'memory', '--quiet'], app, 60_000);
    expect(plain.code, plain.stderr).toBe(0);
    expect(existsSync(join(app, 'research-pipeline'))).toBe(false);
  });

  // bundler: what Vite and Next projects use; node10: older projects (types through typesVersions, and no
  // default import of a CommonJS module in the declarations, which would need esModuleInterop)
  for (const [resolution, module] of [['bundler', 'esnext'], ['node10', 'commonjs'], ['node16', 'node16']] as const) {
    test(`every subpath type-checks under moduleResolution ${resolution}`, async (ctx) => {
      if (skipped) ctx.skip(`skipped: ${skipped}`);
      const app = join(dir, 'app');
      const r = await run(process.execPath, [TSC, '--noEmit', '--pretty', 'false', '--strict', '--exactOptionalPropertyTypes', '--noUncheckedIndexedAccess', '--skipLibCheck', 'false', '--moduleResolution', resolution, '--module', module, '--target', 'es2022', '--types', 'node', join('resolutions', 'subpaths.ts')], app);
      expect(r.stdout, r.stdout).toBe('');
      expect(r.code).toBe(0);
    });
  }

  for (const node of [process.execPath, ...EXTRA_NODES]) {
    test(`the program runs on ${node}`, async (ctx) => {
      if (skipped) ctx.skip(`skipped: ${skipped}`);
      const r = await run(node, [join(dir, 'app', 'out', 'good.js')], join(dir, 'app'), 60_000);
      expect(r.stderr).toBe('');
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(out).toMatchObject({ status: 'completed', result: 'completed', first: 'run.started', last: 'run.completed', output: { draft: expect.stringContaining('tides rise') as unknown } });
      console.log(`consumer program: ok on Node ${String(out['node'])}`);
    });
  }
});
