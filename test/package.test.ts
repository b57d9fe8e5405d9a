/**
 * The package as it is published: its name and subpaths resolve, the tarball holds only runtime code
 * with a LICENSE and no dangling source maps, the core imports no optional capability, and every
 * dependency allows Node 20, 22 and 24. The tarball is built into a scratch folder (the worktree's
 * dist/ is left alone) and listed with `npm pack --dry-run --json`.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import satisfies from 'semver/functions/satisfies.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as core from '@baton-run/baton';
import * as llm from '@baton-run/baton/llm';
import * as mcp from '@baton-run/baton/mcp';
import * as postgres from '@baton-run/baton/postgres';
import * as server from '@baton-run/baton/server';
import * as otel from '@baton-run/baton/otel';
import * as typescript from '@baton-run/baton/typescript';
import * as a2a from '@baton-run/baton/a2a';

const root = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  bin: Record<string, string>;
  files: string[];
  exports: Record<string, string | { types: string; default: string }>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  engines: { node: string };
  license: string;
  repository: { url: string };
  homepage: string;
  bugs: { url: string };
};

describe('the package by name', () => {
  it('is scoped, keeps the `baton` command, and names its repository', () => {
    expect(pkg.name).toBe('@baton-run/baton');
    expect(Object.keys(pkg.bin)).toEqual(['baton']);
    expect(pkg.license).toBe('MIT');
    expect(pkg.repository.url).toMatch(/^git\+https:\/\/github\.com\/.+\.git$/);
    expect(pkg.homepage).toMatch(/^https:\/\//);
    expect(pkg.bugs.url).toMatch(/^https:\/\//);
  });

  it('imports as a user does: the core and each optional capability behind its subpath', () => {
    expect(typeof core.createEngine).toBe('function');
    expect(typeof core.loadWorkflow).toBe('function');
    expect(typeof core.openSqliteStore).toBe('function');
    expect(typeof core.MemoryStore).toBe('function');
    expect(typeof postgres.openPostgresStore).toBe('function');
    expect(typeof llm.bindLlmAgents).toBe('function');
    expect(typeof llm.scriptedProvider).toBe('function');
    expect(typeof mcp.McpHost).toBe('function');
    expect(typeof typescript.loadAgentsModule).toBe('function');
    expect(typeof server.startServer).toBe('function');
    expect(typeof server.createServerApp).toBe('function');
    expect(typeof otel.createOtelTelemetry).toBe('function');
    expect(typeof server.loadA2aServer).toBe('function');
    expect(typeof a2a.A2aTasks).toBe('function');
    expect(typeof a2a.agentCard).toBe('function');
    // the server subpath's types need no @a2a-js/sdk (an optional peer): its SDK-typed parts are behind ./a2a
    for (const moved of ['A2aTasks', 'agentCard']) expect(server).not.toHaveProperty(moved);
    // what needs an optional peer is not in the core
    for (const moved of ['openPostgresStore', 'PostgresStore', 'McpHost', 'bindLlmAgents', 'makeProvider', 'startServer', 'createServerApp', 'createOtelTelemetry', 'otelTelemetryFromEnv']) expect(core).not.toHaveProperty(moved);
  });

  it('every subpath of `exports` has an entry module in src/exports/', () => {
    for (const [sub, target] of Object.entries(pkg.exports)) {
      if (sub === '.' || sub === './package.json') continue;
      expect(typeof target === 'object' && target.default).toBe(`./dist/exports/${sub.slice(2)}.js`);
      expect(existsSync(join(root, 'src', 'exports', `${sub.slice(2)}.ts`))).toBe(true);
    }
  });
});

describe('dependencies', () => {
  const optional = ['pg', 'better-sqlite3', '@ai-sdk/provider', '@ai-sdk/openai', '@ai-sdk/anthropic', '@ai-sdk/openai-compatible', '@modelcontextprotocol/sdk', 'tsx', 'hono', '@hono/node-server', '@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/resources', '@opentelemetry/exporter-trace-otlp-proto', '@a2a-js/sdk'];

  it('each optional capability is an optional peer, kept in devDependencies so this repository installs everything', () => {
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual([...optional].sort());
    for (const p of optional) {
      expect(pkg.peerDependenciesMeta[p]).toEqual({ optional: true });
      expect(pkg.devDependencies[p]).toBeDefined();
      expect(pkg.dependencies[p]).toBeUndefined();
    }
    expect(pkg.dependencies['ai']).toBeUndefined();
  });

  it('docs/package.md names every dependency of the core, and counts them right', () => {
    const doc = readFileSync(join(root, 'docs', 'package.md'), 'utf8').replace(/\s+/g, ' ');
    const m = /installs with (\w+) dependencies: (.*?)\. Each other capability/.exec(doc);
    expect(m).not.toBeNull();
    const named = [...m![2]!.matchAll(/`([^`]+)`/g)].map((x) => x[1]!).sort();
    const deps = Object.keys(pkg.dependencies).sort();
    expect(named).toEqual(deps);
    const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];
    expect(m![1]).toBe(words[deps.length]);
    // and docs/server.md, which repeats the count
    expect(readFileSync(join(root, 'docs', 'server.md'), 'utf8').replace(/\s+/g, ' ')).toContain(`the core stays at its ${words[deps.length]!} dependencies`);
  });

  it('every installed dependency and peer allows Node 20.19, 22.13 and 24', () => {
    for (const name of [...Object.keys(pkg.dependencies), ...optional]) {
      const range = (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { engines?: { node?: string } }).engines?.node;
      if (range === undefined) continue;
      for (const v of ['20.19.0', '22.13.0', '24.0.0']) expect([name, v, satisfies(v, range)]).toEqual([name, v, true]);
    }
    for (const v of ['20.19.0', '22.13.0', '24.0.0']) expect(satisfies(v, pkg.engines.node)).toBe(true);
  });

  it('`npm run build` empties dist/ first: a module gone from src/ (or test code built before it was excluded) is never packed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-prebuild-'));
    try {
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'x', private: true, scripts: { prebuild: (pkg as unknown as { scripts: Record<string, string> }).scripts['prebuild'] } }));
      mkdirSync(join(dir, 'dist', 'store'), { recursive: true });
      writeFileSync(join(dir, 'dist', 'store', 'conformance.js'), "import 'vitest';\n");
      execFileSync('npm', ['run', 'prebuild', '--silent'], { cwd: dir, stdio: 'pipe' });
      expect(existsSync(join(dir, 'dist'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('engines admits only the Node lines that require() ES modules without a flag (cel-js is required on the first condition)', () => {
    for (const v of ['20.19.0', '20.20.2', '22.12.0', '22.13.0', '23.0.0', '24.0.0']) expect([v, satisfies(v, pkg.engines.node)]).toEqual([v, true]);
    for (const v of ['20.18.3', '21.7.3', '22.0.0', '22.11.0']) expect([v, satisfies(v, pkg.engines.node)]).toEqual([v, false]);
  });

  it('`baton` on a Node that cannot require() ES modules refuses in one line (exit 2), instead of calling every condition a syntax error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-esm-'));
    try {
      writeFileSync(join(dir, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: w}\nworkflow:\n  a:\n    title: A\n    assign: a\n    skip_when: "1 > 2"\n');
      // what Node 21 and 22.0-22.11 do by default, on the Node running this test
      const r = spawnSync(process.execPath, ['--no-experimental-require-module', join(root, 'bin', 'baton.js'), 'validate', 'workflow.yaml'], { cwd: dir, encoding: 'utf8' });
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^baton: Node\.js v[\d.]+ cannot require\(\) ES modules, which Baton needs: use Node \^20\.19 or >= 22\.12 without --no-experimental-require-module\n$/);
      expect(r.status).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the tarball', () => {
  /** A user's project, and the package installed in it (`work`, its node_modules/@baton-run/baton). */
  let project: string;
  let work: string;
  let files: string[];

  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'baton-pack-'));
    work = join(project, 'node_modules', '@baton-run', 'baton');
    mkdirSync(work, { recursive: true });
    // the package's own files, with dist/ built here (not in the worktree)
    for (const f of ['package.json', 'README.md', 'LICENSE', ...pkg.files.filter((f) => f !== 'dist' && !f.startsWith('!'))]) cpSync(join(root, f), join(work, f), { recursive: true });
    // what `baton run paper-contracts` leaves in a checkout (git-ignored): never packed
    mkdirSync(join(work, 'examples', 'paper-contracts', 'output-drafts', 'sections'), { recursive: true });
    writeFileSync(join(work, 'examples', 'paper-contracts', 'output-drafts', 'sections', 'introduction.tex'), 'a draft\n');
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(work, 'dist')], { stdio: 'pipe' });
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const [listing] = JSON.parse(out) as [{ name: string; files: { path: string }[] }];
    expect(listing.name).toBe('@baton-run/baton');
    files = listing.files.map((f) => f.path).sort();
  }, 240_000);
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  it('has a LICENSE, the README, the command and the entry points', () => {
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'bin/baton.js', 'dist/index.js', 'dist/index.d.ts']));
    expect(readFileSync(join(work, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) 2026 The Baton authors\n/);
    for (const target of Object.values(pkg.exports)) {
      for (const f of typeof target === 'string' ? [target] : [target.types, target.default]) expect(files).toContain(f.replace(/^\.\//, ''));
    }
  });

  it('holds no output of a run of an example (paper-contracts writes its drafts beside it in a checkout)', () => {
    expect(files.filter((f) => f.includes('output-drafts'))).toEqual([]);
    expect(files).toContain('examples/paper-contracts/workflow.yaml');
  });

  it('holds no tests and no test support', () => {
    expect(files.filter((f) => /\.(test|spec)\.[cm]?[jt]s$|(^|\/)(conformance|testing|processes)\.(js|d\.ts)$/.test(f) && f.startsWith('dist/'))).toEqual([]);
    const importsVitest = files.filter((f) => f.endsWith('.js') && /from ['"]vitest['"]|import\(['"]vitest['"]\)/.test(readFileSync(join(work, f), 'utf8')));
    expect(importsVitest).toEqual([]);
  });

  it('has no source map without its source', () => {
    const dangling = files.filter((f) => f.endsWith('.map')).filter((m) => {
      const map = JSON.parse(readFileSync(join(work, m), 'utf8')) as { sources: string[] };
      return map.sources.some((s) => !files.includes(join(dirname(m), s)));
    });
    expect(dangling).toEqual([]);
  });

  it('the core imports only its dependencies; optional capabilities are reached only through dynamic imports', () => {
    // every module the core's entry reaches without a dynamic import()
    const { files: seen, packages } = staticallyReached(join(work, 'dist', 'index.js'));
    expect(seen.size).toBeGreaterThan(50);
    expect([...packages].filter((p) => pkg.dependencies[p] === undefined)).toEqual([]);
    // and nothing in the tarball imports a package that is neither a dependency nor a peer
    const everywhere = new Set(files.filter((f) => f.startsWith('dist/') && f.endsWith('.js')).flatMap((f) => staticImports(join(work, f))).filter((s) => !s.startsWith('.') && !builtins.has(s)).map(pkgOf));
    expect([...everywhere].filter((p) => pkg.dependencies[p] === undefined && pkg.peerDependencies[p] === undefined)).toEqual([]);
  });

  it('every subpath imports without its optional peers: none is reached without a dynamic import()', () => {
    for (const sub of Object.keys(pkg.exports)) {
      if (sub === '.' || sub === './package.json') continue;
      const { packages } = staticallyReached(join(work, 'dist', 'exports', `${sub.slice(2)}.js`));
      expect([sub, [...packages].filter((p) => pkg.dependencies[p] === undefined)]).toEqual([sub, []]);
    }
  });

  describe('installed without any optional peer', () => {
    // the built package with its dependencies only, beside it in the project's node_modules (as npm installs
    // it: optional peers are not installed); a program imports it by name
    const installed = (dep: string): string => join(project, 'node_modules', dep);
    const link = (dep: string): void => {
      mkdirSync(dirname(installed(dep)), { recursive: true });
      symlinkSync(join(root, 'node_modules', dep), installed(dep), 'dir');
    };
    beforeAll(() => {
      for (const dep of [...Object.keys(pkg.dependencies), '@types/node']) link(dep);
      for (const peer of Object.keys(pkg.peerDependencies)) expect(existsSync(installed(peer))).toBe(false);
    });

    it('each subpath imports, and its first use is a missing-package error naming the install command', async () => {
      const program = `
        const { BatonError, createEngine, MemoryStore, openStore, telemetryFromEnv } = await import('@baton-run/baton');
        const engine = () => createEngine({ store: new MemoryStore() });
        const uses = {
          postgres: async () => (await import('@baton-run/baton/postgres')).openPostgresStore('postgres://127.0.0.1:1/x'),
          openStore: () => openStore('postgres://127.0.0.1:1/x'),
          createOtelTelemetry: async () => (await import('@baton-run/baton/otel')).createOtelTelemetry({}),
          otelTelemetryFromEnv: async () => (await import('@baton-run/baton/otel')).otelTelemetryFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' }),
          telemetryFromEnv: () => telemetryFromEnv({ OTEL_TRACES_EXPORTER: 'console' }),
          createServerApp: async () => (await import('@baton-run/baton/server')).createServerApp({ engine: engine() }),
          startServer: async () => (await import('@baton-run/baton/server')).startServer({ engine: engine(), port: 0 }),
          loadA2aServer: async () => (await import('@baton-run/baton/a2a')).loadA2aServer(),
          loadAgentsModule: async () => {
            const fs = await import('node:fs'), os = await import('node:os'), path = await import('node:path');
            const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-ts-agents-'));
            fs.writeFileSync(path.join(dir, 'agents.ts'), 'export default { a: (): object => ({}) };');
            try { return await (await import('@baton-run/baton/typescript')).loadAgentsModule('agents.ts', dir); } finally { fs.rmSync(dir, { recursive: true }); }
          },
        };
        const out = {};
        for (const [name, use] of Object.entries(uses)) {
          try { await use(); out[name] = 'no error'; } catch (e) { out[name] = { name: e.name, code: e.code, message: e.message, baton: e instanceof BatonError }; }
        }
        console.log(JSON.stringify(out));`;
      const ran = await spawned(process.execPath, ['--input-type=module', '-e', program], { cwd: work });
      expect(ran.stderr).toBe('');
      const out = JSON.parse(ran.stdout) as Record<string, { name: string; code: string; message: string; baton: boolean }>;
      const otel = '@opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/resources';
      const installs: Record<string, string> = {
        postgres: 'pg',
        openStore: 'pg',
        createOtelTelemetry: otel,
        otelTelemetryFromEnv: `${otel} @opentelemetry/exporter-trace-otlp-proto`,
        telemetryFromEnv: otel,
        createServerApp: 'hono',
        startServer: 'hono @hono/node-server',
        loadA2aServer: '@a2a-js/sdk',
      };
      for (const [use, install] of Object.entries(installs)) {
        expect([use, out[use]?.name, out[use]?.code]).toEqual([use, 'BatonError', 'missing-package']);
        expect(out[use]!.message).toMatch(new RegExp(`: npm install ${install.replace(/[.*+?^$()|[\]\\/]/g, '\\$&')}$`));
      }
      // a TypeScript agents module without tsx: its own class, and a BatonError with the same code
      expect(out['loadAgentsModule']).toEqual({ name: 'AgentsModuleError', code: 'missing-package', baton: true, message: 'agents.ts: TypeScript agents need the `tsx` package: npm install tsx (or compile it to .js)' });
    });

    it('OTEL_* variables without the OpenTelemetry packages: `baton run` says so in one line (exit 2), or a JSON error', async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'baton-otel-missing-'));
      try {
        const baton = (args: string[]): ReturnType<typeof spawned> =>
          spawned(process.execPath, [join(work, 'bin', 'baton.js'), 'run', 'research-pipeline', '--store', 'memory', ...args], { cwd, env: { ...process.env, OTEL_TRACES_EXPORTER: 'console', NO_COLOR: '1' } });
        const text = await baton(['--quiet']);
        expect(text.status).toBe(2);
        expect(text.stdout).toBe('');
        expect(text.stderr).toBe(
          'baton run: tracing (OTEL_* variables) needs the `@opentelemetry/api`, `@opentelemetry/sdk-trace-base` and `@opentelemetry/resources` packages: npm install @opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/resources\n',
        );
        const json = await baton(['--json']);
        expect(json.status).toBe(2);
        expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'missing-package', command: 'run', message: expect.stringContaining('npm install @opentelemetry/api') as unknown } });
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    });

    it('the declarations type-check in a strict program (skipLibCheck: false) without the peers; /a2a needs only @a2a-js/sdk', async () => {
      const app = join(work, 'consumer');
      mkdirSync(app, { recursive: true });
      const options = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', noEmit: true, types: ['node'] };
      writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files: ['program.ts'] }));
      writeFileSync(join(app, 'tsconfig.a2a.json'), JSON.stringify({ compilerOptions: options, files: ['a2a.ts'] }));
      // TypeScript 7 (and its `tsc --init`) defaults `types` to []: @types/node installed but not listed. The
      // declarations name Node's types (Buffer, node:http, Symbol.asyncDispose), so each entry references them itself
      writeFileSync(join(app, 'tsconfig.untyped.json'), JSON.stringify({ compilerOptions: { ...options, types: [], lib: ['ES2022'] }, files: ['program.ts'] }));
      writeFileSync(
        join(app, 'program.ts'),
        `import { BudgetExceededError, createEngine, MemoryStore, MissingOutputError, OutputTypeMismatchError, type RunEvent, type RunStore, type WorkflowError, type WorkflowErrorPayload } from '@baton-run/baton';
import { openPostgresStore, type PostgresStore } from '@baton-run/baton/postgres';
import { createOtelTelemetry, otelTelemetryFromEnv, type OtelSpanProcessor, type Telemetry } from '@baton-run/baton/otel';
import { createServerApp, startServer, type BatonServer, type ServerApp } from '@baton-run/baton/server';
import * as llm from '@baton-run/baton/llm';
import * as mcp from '@baton-run/baton/mcp';
import * as typescript from '@baton-run/baton/typescript';
// the option objects and results of the exported functions are exported too, by name
import type { CompileOptions, OutputCheck, JsonConversion, Json, JsonObject, SubschemaOptions, RunFilter, StoreSpec, SpanContextIds, ErrorCode, RenderOptions, JsonDiagnostic, TypeExprParseResult } from '@baton-run/baton';
import type { ProviderDeps, LlmSettings, ScriptResult } from '@baton-run/baton/llm';
import type { OfferedTool, ToolResult } from '@baton-run/baton/mcp';
import type { SpanContextIds as OtelSpanContextIds } from '@baton-run/baton/otel';
export type Named = [CompileOptions, OutputCheck, JsonConversion, Json, JsonObject, SubschemaOptions, RunFilter, StoreSpec, SpanContextIds, ErrorCode, RenderOptions, JsonDiagnostic, TypeExprParseResult, ProviderDeps, LlmSettings, ScriptResult, OfferedTool, ToolResult, OtelSpanContextIds];
const engine = createEngine({ store: new MemoryStore() });
const processors: OtelSpanProcessor[] = [];
const telemetry: Promise<Telemetry> = createOtelTelemetry({ spanProcessors: processors, serviceName: 'x' });
const fromEnv: Promise<Telemetry> = otelTelemetryFromEnv({});
const app: Promise<ServerApp> = createServerApp({ engine });
const server: Promise<BatonServer> = startServer({ engine, port: 0 });
const store: Promise<RunStore> = openPostgresStore('postgres://x').then((s: PostgresStore) => s);
// toJSON() of the named errors is their payload, typed field by field (it was Record<string, unknown>)
const missing: string[] = new MissingOutputError('t', 'p', ['k']).toJSON().missing_keys;
const payload: WorkflowErrorPayload = (new OutputTypeMismatchError('t', 'p', 'k', 'string', 'number') as WorkflowError).toJSON();
const expected: string | undefined = payload.error === 'OutputTypeMismatchError' ? payload.expected_type : undefined;
const spent: number = new BudgetExceededError('run', 1, 2).toJSON().spent_usd;
// and so are the payloads of the events that carry them
const rejected = (e: RunEvent): string[] => (e.type === 'task.rejected' && e.error.error === 'MissingOutputError' ? e.error.missing_keys : []);
const suspended = (e: RunEvent): string | null | undefined => (e.type === 'task.claim_rejected' && e.error.error === 'UpstreamIntentSuspendedError' ? e.error.expected_resume_at : undefined);
export const all = [telemetry, fromEnv, app, server, store, llm, mcp, typescript, missing, expected, spent, rejected, suspended];
`,
      );
      writeFileSync(join(app, 'a2a.ts'), `import { agentCard, A2aTasks } from '@baton-run/baton/a2a';
export const all = [agentCard, A2aTasks];
`);
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const check = async (project: string): Promise<string> => {
        const r = await spawned(process.execPath, [tsc, '-p', join(app, project), '--pretty', 'false']);
        return r.stdout + r.stderr;
      };
      expect(await check('tsconfig.json')).toBe('');
      expect(await check('tsconfig.untyped.json')).toBe('');
      // /a2a names the SDK's types (what it is for), and nothing of hono
      link('@a2a-js/sdk');
      try {
        expect(await check('tsconfig.a2a.json')).toBe('');
      } finally {
        rmSync(installed('@a2a-js/sdk'));
      }
    }, 120_000);

    it('a bundled example whose contract declares files it writes (paper-contracts) runs from a copy in the project, never inside node_modules', async () => {
      // its agents are TypeScript: tsx, the one peer it needs
      link('tsx');
      // a run from a checkout leaves its drafts there (git-ignored, not packed), as the copy above has them
      const inside = join(work, 'examples', 'paper-contracts', 'output-drafts');
      rmSync(inside, { recursive: true, force: true });
      try {
        const r = await spawned(process.execPath, [join(work, 'bin', 'baton.js'), 'run', 'paper-contracts', '--store', 'memory', '--quiet'], { cwd: project, env: { ...process.env, NO_COLOR: '1' } });
        expect(r.status, r.stderr).toBe(0);
        expect(r.stderr).toContain('copied it to ./paper-contracts');
        expect(readdirSync(join(project, 'paper-contracts', 'output-drafts', 'sections'))).toEqual(['introduction.tex']);
        expect(existsSync(inside)).toBe(false);
      } finally {
        rmSync(installed('tsx'));
        rmSync(join(project, 'paper-contracts'), { recursive: true, force: true });
      }
    }, 60_000);
  });

  it('the command starts light: `baton --version` loads no command, no compiler and no package; the live table loads on a terminal only', () => {
    const main = staticallyReached(join(work, 'dist', 'cli', 'main.js'));
    expect([...main.packages]).toEqual([]);
    expect([...main.files].map((f) => f.slice(join(work, 'dist').length + 1)).filter((f) => f.startsWith('workflow/') || f.startsWith('engine/') || f.startsWith('store/'))).toEqual([]);
    // a run loads log-update (the live table) only when it draws one, and semver only to compare versions
    const run = staticallyReached(join(work, 'dist', 'cli', 'run.js'));
    expect([...run.packages].filter((p) => /^(log-update|semver)\b/.test(p))).toEqual([]);
    expect(readFileSync(join(work, 'bin', 'baton.js'), 'utf8')).toContain('enableCompileCache');
  });
});

const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** A child process's outcome, without blocking this worker (a synchronous tsc of 30 s starves vitest's RPC). */
function spawned(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(file, args, { ...opts, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

function pkgOf(spec: string): string {
  return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
}

/** The specifiers a built module imports statically (`import ... from`, `export ... from`, a bare `import '...'`). */
function staticImports(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]|^import\s+['"]([^'"]+)['"]/gm)].map((m) => (m[1] ?? m[2])!);
}

/** Every module `entry` reaches without a dynamic import(), and the packages they import. */
function staticallyReached(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (!builtins.has(spec)) packages.add(pkgOf(spec));
    }
  };
  visit(entry);
  return { files, packages };
}
