/** A CliIo for tests that call the CLI in process: what it printed, and a Ctrl-C (or SIGTERM) to send it. */
import type { CliIo, Interruption } from '../../src/cli/io.js';

export type CapturedIo = CliIo & { out: () => string; err: () => string; interrupt: (why: Interruption) => void };

export function captureIo(cwd: string, env: Record<string, string> = { USER: 'tester' }): CapturedIo {
  let out = '';
  let err = '';
  let handler: ((why: Interruption) => void) | undefined;
  return {
    stdout: (s) => void (out += s),
    stderr: (s) => void (err += s),
    isTTY: false,
    cwd,
    env,
    out: () => out,
    err: () => err,
    onInterrupt: (h) => {
      handler = h;
      return () => (handler = undefined);
    },
    interrupt: (why) => handler?.(why),
  };
}
