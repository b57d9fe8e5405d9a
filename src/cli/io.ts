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
  /** Registers a SIGINT handler; returns the function that removes it (absent in tests). */
  onInterrupt?: (handler: () => void) => () => void;
}

export function processIo(): CliIo {
  const interrupts = new Set<() => void>();
  let readerGone = false;
  // A reader that went away (`baton validate --json | head`) makes the next write fail with EPIPE.
  // That ends Baton quietly: later writes are dropped, and a run in progress stops as on Ctrl-C.
  const onWriteError = (): void => {
    if (readerGone) return;
    readerGone = true;
    for (const h of [...interrupts]) h();
  };
  process.stdout.on('error', onWriteError);
  process.stderr.on('error', onWriteError);
  const writer =
    (stream: NodeJS.WriteStream) =>
    (s: string): void => {
      if (!stream.destroyed && !stream.writableEnded) stream.write(s);
    };
  return {
    stdout: writer(process.stdout),
    stderr: writer(process.stderr),
    isTTY: Boolean(process.stdout.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    cwd: process.cwd(),
    env: process.env,
    stdoutStream: process.stdout,
    stderrStream: process.stderr,
    exit: (code) => process.exit(code),
    onInterrupt: (handler) => {
      process.on('SIGINT', handler);
      interrupts.add(handler);
      return () => {
        process.off('SIGINT', handler);
        interrupts.delete(handler);
      };
    },
  };
}
