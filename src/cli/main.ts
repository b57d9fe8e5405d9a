/** The `baton` command: `run(argv, io) -> exit code`. bin/baton.js is a two-line shim. */
import { parseArgs } from 'node:util';
import { safeText } from '../diagnostics/terminal.js';
import { processIo, type CliIo } from './io.js';
import { validateCommand } from './validate.js';

export const USAGE = `baton — runs OpenIntent Workflow YAML 1.0 pipelines; the executor owns the contract between phases.

Usage:
  baton validate FILE|DIR|EXAMPLE... [--json]  check workflows: every problem, with file:line:col and a hint
  baton check FILE [--agents M] [--json]  agent contracts: the verdict of every binding and edge (--contracts DIR: contract files alone)
  baton types FILE [-o OUT.ts]         TypeScript types of every phase's input and output, and a typed defineHandlers
  baton run FILE [options]             run a workflow end to end
  baton runs [--status S] [--json]     list the runs in the store
  baton show RUN [--events] [--json]   a run: status, phases (input, output, failure), gates, events
  baton resume RUN                     continue a run (after a crash, Ctrl-C or a wait) in this process
  baton rerun RUN --from PHASE         a new run reusing every output upstream of PHASE
  baton worker [--concurrency N]       run the ready tasks of every run in the store (PostgreSQL: many machines)
  baton approve|deny RUN GATE [--as NAME] [--comment TEXT]   decide an approval gate
  baton respond RUN GATE --value JSON  answer an input gate (ctx.requestInput)
  baton cancel RUN                     cancel a run
  baton list                           list the bundled examples
  baton new "Name" [--dir DIR]         write a commented starter workflow and its agents file
  baton --help | --version

Options for run:
  --agents MODULE      .js/.mjs/.ts module whose default export maps agent ids to handlers
  --agent-command ID=CMD  bind agent ID to a subprocess started per task (JSON on stdin/stdout); repeatable
  --agent-serve ID=CMD    bind agent ID to one long-lived subprocess answering JSON lines; repeatable
  --stub-agents        bind every agent to a stub returning values built from the declared output types
  --auto-approve       approve every gate as it opens (recorded as automatic)
  --store SPEC         where runs are kept: a SQLite file (default .baton/baton.db), postgres://..., or memory;
                       default from BATON_STORE
  --sync full|normal   SQLite durability: full (default, survives power loss) or normal (faster, survives crashes)
  --run-id ID          start with this id; a second start with the same id is refused (exit 2)
  --detach             only store the run and print its id (a \`baton worker\` or \`baton resume\` runs it)
  --llm AGENT          run AGENT on a model with its outputs enforced (agents with a blueprint always do); repeatable
  --llm-agents         run every agent that is still unbound on a model (docs/llm-agents.md)
  --replies FILE       play model replies from FILE (the scripted provider) instead of calling a provider
  --trigger JSON       trigger payload, or @file.json (default: trigger.json beside the workflow)
  --initial-state JSON run-level values for $initial_state.* keys a phase does not set, or @file.json
  --output FILE        write the run result as JSON to FILE
  --json               print the run result as JSON on stdout
  --concurrency N      attempts running at the same time (default 32)
  --timeout SECONDS    timeout for the whole run (default: governance.timeout_hours)
  --quiet, -q          no progress output

Exit codes: 0 success, 1 invalid workflow (validate) or failed run, 2 usage error or unreadable/invalid input.
`;

export interface Command {
  (args: string[], io: CliIo): Promise<number>;
}

const commands: Record<string, () => Promise<Command>> = {
  validate: () => Promise.resolve(validate),
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
  approve: async () => (await import('./gates.js')).decideCommand('approve'),
  deny: async () => (await import('./gates.js')).decideCommand('deny'),
  respond: async () => (await import('./gates.js')).respondCommand,
  cancel: async () => (await import('./gates.js')).cancelCommand,
};

async function validate(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (values.help) {
    io.stdout('Usage: baton validate FILE|DIR|EXAMPLE... [--json]\n');
    return 0;
  }
  if (positionals.length === 0) {
    io.stderr('baton validate: name at least one workflow (a file, a directory holding workflow.yaml, or a bundled example)\n');
    return 2;
  }
  return validateCommand(positionals, { json: values.json === true }, io);
}

export async function run(argv: string[], io: CliIo): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.stdout(USAGE);
    return cmd === undefined ? 2 : 0;
  }
  if (cmd === '--version' || cmd === '-v') {
    io.stdout(`${await version()}\n`);
    return 0;
  }
  const load = commands[cmd];
  if (!load) {
    io.stderr(`baton: unknown command \`${safeText(cmd, 200)}\`\n\n${USAGE}`);
    return 2;
  }
  try {
    return await (await load())(rest, io);
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`baton ${cmd}: ${parseArgsMessage((e as Error).message, rest)}\n`);
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

async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  return run(argv, processIo());
}
