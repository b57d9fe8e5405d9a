/** The CLI's view of the world, injected so `run(argv, io)` is a plain function in tests. */
export interface CliIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Colours and the live view only on a TTY. */
  isTTY: boolean;
  cwd: string;
  env: Record<string, string | undefined>;
  /** The real terminal stream behind stdout, for the live view (absent in tests). */
  stdoutStream?: NodeJS.WriteStream;
  stderrStream?: NodeJS.WriteStream;
  /** Registers a SIGINT handler; returns the function that removes it (absent in tests). */
  onInterrupt?: (handler: () => void) => () => void;
}

export function processIo(): CliIo {
  return {
    stdout: (s) => process.stdout.write(s),
    stderr: (s) => process.stderr.write(s),
    isTTY: Boolean(process.stdout.isTTY) && process.env['NO_COLOR'] === undefined,
    cwd: process.cwd(),
    env: process.env,
    stdoutStream: process.stdout,
    stderrStream: process.stderr,
    onInterrupt: (handler) => {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
  };
}
