/** The `baton` command: `run(argv, io) -> exit code`. bin/baton.js is a two-line shim. */
import { parseArgs } from 'node:util';
import { processIo, type CliIo } from './io.js';
import { validateCommand } from './validate.js';

export const USAGE = `baton — runs OpenIntent Workflow YAML 1.0 pipelines; the executor owns the contract between phases.

Usage:
  baton validate FILE... [--json]      check workflows: every problem, with file:line:col and a hint
  baton run FILE [options]             run a workflow end to end
  baton list                           list the bundled examples
  baton new "Name" [--dir DIR]         write a commented starter workflow and its agents file
  baton --help | --version

Options for run:
  --agents MODULE      .js/.mjs/.ts module whose default export maps agent ids to handlers
  --agent-command ID=CMD  bind agent ID to a subprocess started per task (JSON on stdin/stdout); repeatable
  --agent-serve ID=CMD    bind agent ID to one long-lived subprocess answering JSON lines; repeatable
  --stub-agents        bind every agent to a stub returning values built from the declared output types
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
  list: async () => (await import('./list.js')).listCommand,
  new: async () => (await import('./new.js')).newCommand,
};

async function validate(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (values.help) {
    io.stdout('Usage: baton validate FILE... [--json]\n');
    return 0;
  }
  if (positionals.length === 0) {
    io.stderr('baton validate: name at least one workflow file\n');
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
    io.stderr(`baton: unknown command \`${cmd}\`\n\n${USAGE}`);
    return 2;
  }
  try {
    return await (await load())(rest, io);
  } catch (e) {
    if ((e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`baton ${cmd}: ${(e as Error).message}\n`);
      return 2;
    }
    throw e;
  }
}

async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  return run(argv, processIo());
}
