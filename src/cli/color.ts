/**
 * Whether a stream gets colour, decided per stream: what goes to stderr is coloured by stderr's own
 * TTY-ness (`baton run 2>err.txt` writes no escape codes there). In order: `--color always|never`,
 * then FORCE_COLOR (the supports-color convention: empty, `true` or 1-3 force colour, 0 or `false`
 * turn it off), then NO_COLOR when non-empty (no-color.org), then a TTY whose TERM is not `dumb`.
 */
import pc from 'picocolors';
import type { CliIo } from './io.js';

export type ColorMode = 'auto' | 'always' | 'never';

export type Colors = ReturnType<typeof pc.createColors>;

/** FORCE_COLOR as a level (0 = off), or undefined when it says nothing. */
export function forceColorLevel(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (v === '' || v === 'true') return 1;
  if (v === 'false') return 0;
  const n = Number.parseInt(v, 10);
  // any other value forces colour, as supports-color reads it
  return Number.isNaN(n) ? 1 : Math.max(0, Math.min(3, n));
}

export function useColor(io: CliIo, stream: 'stdout' | 'stderr'): boolean {
  const mode = io.color ?? 'auto';
  if (mode !== 'auto') return mode === 'always';
  const forced = forceColorLevel(io.env['FORCE_COLOR']);
  if (forced !== undefined) return forced > 0;
  if ((io.env['NO_COLOR'] ?? '') !== '') return false;
  const tty = stream === 'stdout' ? io.isTTY : io.stderrIsTTY === true;
  return tty && io.env['TERM'] !== 'dumb';
}

/** picocolors for what goes to `stream`. */
export function colorsFor(io: CliIo, stream: 'stdout' | 'stderr'): Colors {
  return pc.createColors(useColor(io, stream));
}

/** Columns of the terminal behind `stream`, else COLUMNS, else undefined (not a terminal: no limit but the frame's own). */
export function columnsFor(io: CliIo, stream: 'stdout' | 'stderr'): number | undefined {
  const s = stream === 'stdout' ? io.stdoutStream : io.stderrStream;
  const tty = stream === 'stdout' ? io.isTTY : io.stderrIsTTY === true;
  if (tty && s?.columns !== undefined && s.columns > 0) return s.columns;
  const env = Number(io.env['COLUMNS']);
  return Number.isInteger(env) && env > 0 ? env : undefined;
}
