import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from './io.js';
import { run } from './main.js';
import { COMMANDS } from './spec.js';

async function script(shell: string): Promise<string> {
  let out = '';
  const io: CliIo = { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: process.cwd(), env: {} };
  expect(await run(['completion', shell], io)).toBe(0);
  return out;
}

function has(shell: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;
}

function saved(text: string, name: string): string {
  const p = join(mkdtempSync(join(tmpdir(), 'baton-completion-')), name);
  writeFileSync(p, text);
  return p;
}

/** COMPREPLY of the bash completion function for the words typed so far (the last one being completed). */
function complete(file: string, words: string[], cwd = process.cwd()): string[] {
  const quoted = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
  const out = execFileSync('bash', ['-c', `source '${file}'; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _baton; printf '%s\\n' "\${COMPREPLY[@]}"`], { cwd, encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

describe('baton completion bash', () => {
  test('bash parses it', async () => {
    const file = saved(await script('bash'), 'baton.bash');
    expect(spawnSync('bash', ['-n', file]).status).toBe(0);
  });

  test('commands, flags, flag values, examples', async () => {
    const file = saved(await script('bash'), 'baton.bash');
    expect(complete(file, ['baton', 'ru']).sort()).toEqual(['run', 'runs']);
    expect(complete(file, ['baton', ''])).toContain('completion');
    expect(complete(file, ['baton', 'run', '--js'])).toEqual(['--json']);
    expect(complete(file, ['baton', 'run', '--st'])).toEqual(expect.arrayContaining(['--store', '--state-out', '--stub-agents']));
    expect(complete(file, ['baton', 'runs', '--st']).sort()).toEqual(['--status', '--store']);
    expect(complete(file, ['baton', 'validate', '--format', ''])).toEqual(['text', 'json', 'sarif', 'github']);
    expect(complete(file, ['baton', 'run', '--color', 'a'])).toEqual(['auto', 'always']);
    expect(complete(file, ['baton', 'run', 'research-'])).toContain('research-pipeline');
    expect(complete(file, ['baton', 'completion', ''])).toEqual(['bash', 'zsh', 'fish']);
    // --json is not a flag of completion: each command lists its own
    expect(complete(file, ['baton', 'completion', '--j'])).toEqual([]);
  });

  test('the commands offered bundled examples are those whose usage takes one, and each accepts one', async () => {
    const file = saved(await script('bash'), 'baton.bash');
    const offered = COMMANDS.filter((c) => complete(file, ['baton', c.name, 'research-']).includes('research-pipeline')).map((c) => c.name);
    expect(offered).toEqual(COMMANDS.filter((c) => c.args.includes('EXAMPLE')).map((c) => c.name));
    expect(offered).toEqual(expect.arrayContaining(['validate', 'check', 'types', 'run']));
    for (const cmd of offered.filter((c) => c !== 'run')) {
      const io: CliIo = { stdout: () => undefined, stderr: () => undefined, isTTY: false, cwd: process.cwd(), env: {} };
      expect([cmd, await run([cmd, 'research-pipeline'], io)]).toEqual([cmd, 0]);
    }
  });

  test('a flag that takes a file completes file names', async () => {
    const file = saved(await script('bash'), 'baton.bash');
    const dir = mkdtempSync(join(tmpdir(), 'baton-completion-files-'));
    writeFileSync(join(dir, 'agents.mjs'), '');
    expect(complete(file, ['baton', 'run', 'x', '--agents', 'age'], dir)).toEqual(['agents.mjs']);
  });
});

describe.skipIf(!has('zsh'))('baton completion zsh', () => {
  test('zsh parses it', async () => {
    const file = saved(await script('zsh'), '_baton');
    const r = spawnSync('zsh', ['-n', file], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe.skipIf(!has('fish'))('baton completion fish', () => {
  test('fish parses it', async () => {
    const file = saved(await script('fish'), 'baton.fish');
    const r = spawnSync('fish', ['--no-execute', file], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  test('fish offers run and runs for ru', async () => {
    const file = saved(await script('fish'), 'baton.fish');
    const r = spawnSync('fish', ['-c', `source '${file}'; complete -C 'baton ru'`], { encoding: 'utf8' });
    expect(r.stdout.split('\n').map((l) => l.split('\t')[0]).filter(Boolean).sort()).toEqual(['run', 'runs']);
  });
});

test('an unknown shell is a usage error', async () => {
  let err = '';
  const io: CliIo = { stdout: () => undefined, stderr: (s) => void (err += s), isTTY: false, cwd: process.cwd(), env: {} };
  expect(await run(['completion', 'tcsh'], io)).toBe(2);
  expect(err).toMatch(/bash, zsh, fish/);
});
