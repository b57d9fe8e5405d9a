import { describe, expect, test } from 'vitest';
import { columnsFor, forceColorLevel, useColor } from './color.js';
import type { CliIo } from './io.js';
import { run } from './main.js';

function io(over: Partial<CliIo> & { env?: Record<string, string | undefined> }): CliIo {
  return { stdout: () => undefined, stderr: () => undefined, isTTY: false, cwd: process.cwd(), ...over, env: over.env ?? {} };
}

describe('colour is decided per stream', () => {
  test('stdout follows stdout, stderr follows stderr', () => {
    const a = io({ isTTY: true, stderrIsTTY: false });
    expect([useColor(a, 'stdout'), useColor(a, 'stderr')]).toEqual([true, false]);
    const b = io({ isTTY: false, stderrIsTTY: true });
    expect([useColor(b, 'stdout'), useColor(b, 'stderr')]).toEqual([false, true]);
  });

  test.each([
    // [NO_COLOR, FORCE_COLOR, tty, expected]
    [undefined, undefined, true, true],
    [undefined, undefined, false, false],
    ['', undefined, true, true], // an empty NO_COLOR does not count
    ['1', undefined, true, false],
    ['false', undefined, true, false], // any non-empty value
    [undefined, '', false, true], // empty FORCE_COLOR forces, as in supports-color
    [undefined, '1', false, true],
    [undefined, '3', false, true],
    [undefined, 'true', false, true],
    [undefined, '0', true, false],
    [undefined, 'false', true, false],
    ['1', '1', false, true], // FORCE_COLOR wins over NO_COLOR (as in Node)
  ])('NO_COLOR=%j FORCE_COLOR=%j tty=%j -> %j', (no, force, tty, expected) => {
    expect(useColor(io({ isTTY: tty, stderrIsTTY: tty, env: { NO_COLOR: no, FORCE_COLOR: force } }), 'stdout')).toBe(expected);
    expect(useColor(io({ isTTY: tty, stderrIsTTY: tty, env: { NO_COLOR: no, FORCE_COLOR: force } }), 'stderr')).toBe(expected);
  });

  test('--color wins over the environment; TERM=dumb turns auto colour off', () => {
    expect(useColor(io({ color: 'always', env: { NO_COLOR: '1', FORCE_COLOR: '0' } }), 'stderr')).toBe(true);
    expect(useColor(io({ color: 'never', isTTY: true, env: { FORCE_COLOR: '3' } }), 'stdout')).toBe(false);
    expect(useColor(io({ isTTY: true, env: { TERM: 'dumb' } }), 'stdout')).toBe(false);
  });

  test('FORCE_COLOR levels', () => {
    expect([undefined, '', 'true', 'false', '0', '1', '2', '3', '9', 'yes'].map(forceColorLevel)).toEqual([undefined, 1, 1, 0, 0, 1, 2, 3, 3, 1]);
  });

  test('width: the terminal of the stream, else COLUMNS', () => {
    const stream = { columns: 77 } as NodeJS.WriteStream;
    expect(columnsFor(io({ isTTY: true, stdoutStream: stream }), 'stdout')).toBe(77);
    expect(columnsFor(io({ isTTY: false, stdoutStream: stream }), 'stdout')).toBeUndefined();
    expect(columnsFor(io({ isTTY: false, env: { COLUMNS: '60' } }), 'stderr')).toBe(60);
    expect(columnsFor(io({ stderrIsTTY: true, stderrStream: stream, env: { COLUMNS: '60' } }), 'stderr')).toBe(77);
  });
});

describe('through the CLI', () => {
  const bad = 'test/fixtures/diagnostics/unknown-dependency.yaml';

  test('diagnostics of an invalid run go to stderr, coloured only when stderr is a terminal', async () => {
    for (const [stderrIsTTY, colored] of [
      [true, true],
      [false, false],
    ] as const) {
      let err = '';
      const c = io({ isTTY: !stderrIsTTY, stderrIsTTY, stderr: (s) => void (err += s), env: { BATON_STORE: 'memory' } });
      expect(await run(['run', bad, '--stub-agents'], c)).toBe(2);
      expect(err).toMatch(/error\S*\[unknown-dependency\]/);
      expect(/\x1b\[/.test(err)).toBe(colored);
    }
  });

  test('validate on a pipe: FORCE_COLOR colours, --color never wins, NO_COLOR on a terminal does not colour', async () => {
    const out = async (argv: string[], over: Partial<CliIo> & { env?: Record<string, string> }): Promise<string> => {
      let s = '';
      await run(argv, io({ ...over, stdout: (x) => void (s += x) }));
      return s;
    };
    expect(await out(['validate', bad], { env: { FORCE_COLOR: '1' } })).toMatch(/\x1b\[/);
    expect(await out(['validate', bad, '--color', 'never'], { env: { FORCE_COLOR: '1' } })).not.toMatch(/\x1b\[/);
    expect(await out(['validate', bad], { isTTY: true, env: { NO_COLOR: '1' } })).not.toMatch(/\x1b\[/);
    expect(await out(['validate', bad], { isTTY: true, env: { NO_COLOR: '' } })).toMatch(/\x1b\[/);
  });
});

describe("a run's closing summary on stdout", () => {
  const run_ = async (argv: string[], over: Partial<CliIo> & { env?: Record<string, string> }): Promise<string> => {
    let s = '';
    expect(await run(['run', 'research-pipeline', '--store', 'memory', '-q', ...argv], io({ ...over, stdout: (x) => void (s += x) }))).toBe(0);
    return s;
  };

  test('follows --color, NO_COLOR, TERM=dumb and FORCE_COLOR, as every other output does', async () => {
    expect(await run_([], { isTTY: true })).toMatch(/\x1b\[/);
    expect(await run_(['--color', 'never'], { isTTY: true })).not.toMatch(/\x1b\[/);
    expect(await run_([], { isTTY: true, env: { NO_COLOR: '1' } })).not.toMatch(/\x1b\[/);
    expect(await run_([], { isTTY: true, env: { TERM: 'dumb' } })).not.toMatch(/\x1b\[/);
    expect(await run_([], { env: { FORCE_COLOR: '1' } })).toMatch(/\x1b\[/);
    expect(await run_(['--color', 'always'], { env: { NO_COLOR: '1' } })).toMatch(/\x1b\[/);
  });
});
