import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * `mkdir -p`, one level at a time: Node's own recursive mkdir (sync and async) never returns for a path
 * under /proc (mkdir there fails with ENOENT under a parent that exists, and Node retries it forever).
 * A file (or anything) already at `dir` is not an error here: writing into it reports it.
 */
export function makeDirs(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw e;
    makeDirs(parent);
    mkdirSync(dir);
  }
}
