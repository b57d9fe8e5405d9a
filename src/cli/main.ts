/** The `baton` command: `run(argv, io) -> exit code`. bin/baton.js is a two-line shim. */
import { safeText } from '../diagnostics/terminal.js';
import { didYouMean } from '../core/suggest.js';
import type { ColorMode } from './color.js';
import { printFailure } from './fail.js';
import { checkFlags } from './flags.js';
import { commandHelp, environmentHelp, globalHelp } from './help.js';
import { processIo, type CliIo } from './io.js';
import { COMMANDS, commandSpec } from './spec.js';
import { packageVersion } from './version.js';

export interface Command {
  (args: string[], io: CliIo): Promise<number>;
}

const commands: Record<string, () => Promise<Command>> = {
  validate: async () => (await import('./validate.js')).validateCli,
  run: async () => (await import('./run.js')).runCommand,
  check: async () => (await import('./check.js')).checkCommand,
  types: async () => (await import('./types.js')).typesCommand,
  list: async () => (await import('./list.js')).listCommand,
  new: async () => (await import('./new.js')).newCommand,
  runs: async () => (await import('./runs.js')).runsCommand,
  show: async () => (await import('./runs.js')).showCommand,
  resume: async () => (await import('./resume.js')).resumeCommand,
  rerun: async () => (await import('./resume.js')).rerunCommand,
  worker: async () => (await import('./resume.js')).workerCommand,
  serve: async () => (await import('./serve.js')).serveCommand,
  approve: async () => (await import('./gates.js')).decideCommand('approve'),
  deny: async () => (await import('./gates.js')).decideCommand('deny'),
  respond: async () => (await import('./gates.js')).respondCommand,
  cancel: async () => (await import('./gates.js')).cancelCommand,
  completion: async () => (await import('./completion.js')).completionCommand,
  help: () => Promise.resolve(helpCommand),
};

/** `baton help [COMMAND|environment]`. */
function helpCommand(args: string[], io: CliIo): Promise<number> {
  const [topic, ...more] = args;
  if (topic === undefined) io.stdout(globalHelp());
  else if (topic === 'environment' || topic === 'env') io.stdout(environmentHelp());
  else {
    const spec = commandSpec(topic);
    if (!spec || more.length > 0) {
      const hint = didYouMean(topic, COMMANDS.map((c) => c.name));
      printFailure(io, 'help', 'usage', more.length > 0 && spec ? 'help takes one command' : `unknown command \`${safeText(topic, 200)}\`${hint ? `; ${hint}` : ''} (baton help lists them)`);
      return Promise.resolve(2);
    }
    io.stdout(commandHelp(spec));
  }
  return Promise.resolve(0);
}

export async function run(argv: string[], io: CliIo): Promise<number> {
  // `--color` may also come before the command
  let color: ColorMode | undefined;
  let i = 0;
  for (; i < argv.length && argv[i]!.startsWith('--color'); i++) {
    const m = /^--color(?:=(.*))?$/.exec(argv[i]!);
    const v = m?.[1] ?? argv[++i];
    if (v !== 'auto' && v !== 'always' && v !== 'never') {
      printFailure(io, '', 'usage', `--color expects auto, always or never, got \`${safeText(v ?? '', 200)}\``);
      return 2;
    }
    color = v;
  }
  const [cmd, ...rest] = argv.slice(i);
  if (color !== undefined) io = { ...io, color };
  if (cmd === undefined || cmd === '--help' || cmd === '-h') {
    io.stdout(globalHelp());
    return cmd === undefined ? 2 : 0;
  }
  if (cmd === '--version' || cmd === '-v') {
    io.stdout(`${await packageVersion()}\n`);
    return 0;
  }
  const load = commands[cmd];
  const spec = commandSpec(cmd);
  if (!load || !spec) {
    const hint = didYouMean(cmd, COMMANDS.map((c) => c.name));
    printFailure({ ...io, json: rest.includes('--json') }, '', 'usage', `unknown command \`${safeText(cmd, 200)}\`${hint ? `; ${hint}` : ''} (baton help lists them)`);
    return 2;
  }
  const flags = checkFlags(spec, rest);
  if (!flags.ok) {
    printFailure({ ...io, json: flags.json }, cmd, 'usage', flags.message);
    return 2;
  }
  if (flags.help) {
    io.stdout(commandHelp(spec));
    return 0;
  }
  // a JSON document on stdout is for a program: nothing an agent or a module prints may land in it
  if (flags.json) io.claimStdout?.();
  const cio: CliIo = { ...io, ...(flags.color !== undefined ? { color: flags.color } : {}), json: flags.json };
  try {
    return await (await load())(flags.args, cio);
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      printFailure(cio, cmd, 'usage', parseArgsMessage((e as Error).message, flags.args));
      return 2;
    }
    throw e;
  }
}

/**
 * node:util parseArgs's message in one line. `--concurrency -3` is "ambiguous" to it (the value looks
 * like an option): say what was given and how to write it.
 */
export function parseArgsMessage(message: string, args: readonly string[]): string {
  const ambiguous = /^Option '(--?[\w-]+)' argument is ambiguous/.exec(message);
  if (ambiguous) {
    const flag = ambiguous[1]!;
    const value = args[args.indexOf(flag) + 1];
    // every number Baton's options take is positive: a negative one is a mistake, not an option
    if (value !== undefined && /^-\d/.test(value)) return safeText(`${flag} expects a positive number, got \`${value}\``, 500);
    return safeText(`${flag} ${value ?? ''}: a value that starts with a dash is taken for an option; write ${flag}=${value ?? 'VALUE'} if you mean it`, 500);
  }
  return safeText(message.split('\n')[0] ?? message, 500);
}

export async function main(argv: string[]): Promise<number> {
  return run(argv, processIo());
}

/**
 * Ends the process with `code` once the command has returned. Nothing of Baton's own is left running
 * then, but an `--agents` module's code may be (a `setInterval` at its top level, a connection it
 * opened, a top-level await that never settled): the command is over, so the process ends anyway,
 * after what it wrote has reached stdout and stderr. With nothing left, Node exits on its own first.
 */
export function exitWhenDone(code: number, graceMs = EXIT_GRACE_MS): void {
  process.exitCode = code;
  const deadline = Date.now() + FLUSH_LIMIT_MS;
  const exit = (): void => {
    const pending = process.stdout.writableLength + process.stderr.writableLength;
    if (pending > 0 && Date.now() < deadline) setTimeout(exit, 10).unref();
    else process.exit(code);
  };
  setTimeout(exit, graceMs).unref();
}

const EXIT_GRACE_MS = 200;
const FLUSH_LIMIT_MS = 5_000;
