/** The CLI's view of the world, injected so `run(argv, io)` is a plain function in tests. */
export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Whether stdout is a terminal: the live view, and colour for stdout (see color.ts). */
  isTTY: boolean;
  /** Whether stderr is a terminal: colour for what goes to stderr (absent: not a terminal). */
  stderrIsTTY?: boolean;
  /** `--color`, set by main (absent: auto). */
  color?: 'auto' | 'always' | 'never';
  /** `--json` (or `--format json`), set by main: failures are printed as `{"error": {...}}` on stdout. */
  json?: boolean;
  cwd: string;
  env: Record<string, string | undefined>;
  /** The real terminal stream behind stdout, for the live view (absent in tests). */
  stdoutStream?: NodeJS.WriteStream;
  stderrStream?: NodeJS.WriteStream;
  /** Ends the process at once (absent in tests). */
  exit?: (code: number) => void;
  /**
   * Keeps stdout for what Baton prints (`--json`): from then on, whatever else in the process writes to
   * stdout (an agent's `console.log`, a module's banner) goes to stderr instead (absent in tests).
   */
  claimStdout?: () => void;
  /** Baton's own write to the real stdout, returning what `stream.write` does (backpressure); absent in tests. */
  stdoutWrite?: (s: string) => boolean;
  /** Registers a handler of SIGINT, SIGTERM, SIGHUP and a reader that went away; returns the function that removes it (absent in tests). */
  onInterrupt?: (handler: (why: Interruption) => void) => () => void;
}

/**
 * What interrupts a command: a signal (however it arrives: a terminal, `kill PID`, a supervisor; SIGHUP
 * when the terminal closes) or a closed pipe.
 */
export type Interruption = 'SIGINT' | 'SIGTERM' | 'SIGHUP' | 'reader-gone';

/** Exit status of a process ended by a signal, as a shell reports it. */
export const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

export function processIo(): CliIo {
  const interrupts = new Set<(why: Interruption) => void>();
  let readerGone = false;
  // A reader that went away (`baton validate --json | head`) makes the next write fail with EPIPE.
  // Later writes are dropped; a run in progress is told (it is not cancelled: see foreground.ts).
  const onWriteError = (): void => {
    if (readerGone) return;
    readerGone = true;
    for (const h of [...interrupts]) h('reader-gone');
  };
  process.stdout.on('error', onWriteError);
  process.stderr.on('error', onWriteError);
  // Baton's own writes to stdout go through the write stdout had at the start: claimStdout may send
  // everyone else's to stderr, so that a `--json` document is all that stdout carries
  const out = process.stdout;
  const realWrite = out.write.bind(out);
  const stdoutWrite = (s: string): boolean => realWrite(s);
  const writer =
    (stream: NodeJS.WriteStream, write: (s: string) => unknown) =>
    (s: string): void => {
      if (!stream.destroyed && !stream.writableEnded) write(s);
    };
  return {
    stdout: writer(out, stdoutWrite),
    stdoutWrite,
    claimStdout: () => {
      const err = process.stderr;
      out.write = ((...args: Parameters<typeof err.write>) => err.write(...args)) as typeof out.write;
    },
    stderr: writer(process.stderr, (s) => process.stderr.write(s)),
    isTTY: Boolean(process.stdout.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    cwd: process.cwd(),
    env: process.env,
    stdoutStream: process.stdout,
    stderrStream: process.stderr,
    exit: (code) => process.exit(code),
    onInterrupt: (handler) => {
      const onInt = (): void => handler('SIGINT');
      const onTerm = (): void => handler('SIGTERM');
      // a closed terminal (an ssh session that dropped): stopped as SIGTERM is, not killed outright,
      // which would leave the agents (each in its own process group, out of the hang-up's reach) running
      const onHup = (): void => handler('SIGHUP');
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
      process.on('SIGHUP', onHup);
      interrupts.add(handler);
      // a reader that went away before the handler was registered
      if (readerGone) queueMicrotask(() => handler('reader-gone'));
      return () => {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        process.off('SIGHUP', onHup);
        interrupts.delete(handler);
      };
    },
  };
}
