/**
 * Every command and its options, once: `parseArgs` reads the option shapes, `baton help CMD` and
 * `CMD --help` print the descriptions, the completion scripts list the names, and unknown flags are
 * refused against this table. A command's flags live here and nowhere else.
 */

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  default?: boolean | string;
  /** The value's placeholder in help (`FILE`, `N`). */
  arg?: string;
  /** One line. */
  desc: string;
  /** The default as help shows it, when there is one worth saying. */
  shown?: string;
  /** The accepted values, for help and completion. */
  choices?: readonly string[];
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;

export interface CommandSpec {
  name: string;
  /** Positional arguments as usage shows them. */
  args: string;
  summary: string;
  options: OptionTable;
  /** Other spellings of the usage line. */
  alsoUsage?: readonly string[];
}

/** The options of the durable commands: where runs are kept. */
export const STORE_OPTIONS = {
  store: { type: 'string', arg: 'SPEC', desc: 'where runs are kept: a SQLite file, postgres://..., or memory', shown: 'BATON_STORE, else .baton/baton.db' },
  sync: { type: 'string', arg: 'MODE', desc: 'SQLite durability: full survives power loss, normal only crashes (faster)', shown: 'full', choices: ['full', 'normal'] },
} as const satisfies OptionTable;

/** The options of the commands that bind agents (run, resume, rerun, worker). */
export const BINDING_OPTIONS = {
  agents: { type: 'string', arg: 'MODULE', desc: '.js/.mjs/.ts module whose default export maps agent ids to handlers', shown: 'agents.mjs beside a workflow.yaml, or in the directory named' },
  'agent-command': { type: 'string', multiple: true, arg: 'ID=CMD', desc: 'bind agent ID to a subprocess started per task (JSON on stdin/stdout); repeatable' },
  'agent-serve': { type: 'string', multiple: true, arg: 'ID=CMD', desc: 'bind agent ID to one long-lived subprocess answering JSON lines; repeatable' },
  'stub-agents': { type: 'boolean', default: false, desc: 'bind every unbound agent to a stub returning values built from the declared output types' },
} as const satisfies OptionTable;

const JSON_OPTION = { type: 'boolean', default: false, desc: 'print JSON on stdout (failures too: {"error": {"code", "message"}})' } as const satisfies OptionSpec;
const FORMAT_OPTION = { type: 'string', arg: 'FORMAT', desc: 'text, json, sarif (SARIF 2.1.0 for code scanning) or github (workflow annotations)', shown: 'text', choices: ['text', 'json', 'sarif', 'github'] } as const satisfies OptionSpec;
const QUIET_OPTION = { type: 'boolean', short: 'q', default: false, desc: 'no progress output' } as const satisfies OptionSpec;
const CONCURRENCY_OPTION = { type: 'string', arg: 'N', desc: 'attempts running at the same time', shown: '32' } as const satisfies OptionSpec;
const OUTPUT_OPTION = { type: 'string', arg: 'FILE', desc: 'write the run result as JSON to FILE' } as const satisfies OptionSpec;
/** How long the commands that run work ride out a store that fails (run, resume, rerun, worker, serve). */
const STORE_RETRY_OPTION = { type: 'string', arg: 'SECONDS', desc: 'how long a store that fails (a cut, a restart, a held lock) is retried before giving up', shown: 'BATON_STORE_RETRY, else 300' } as const satisfies OptionSpec;
const WORKSPACE_OPTION = { type: 'string', arg: 'DIR', desc: 'where declared files (inputsFiles / outputsFiles) are read and written', shown: 'the workflow file’s folder' } as const satisfies OptionSpec;

export const VALIDATE_OPTIONS = { json: { ...JSON_OPTION, desc: 'the same as --format json' }, format: FORMAT_OPTION } as const satisfies OptionTable;

export const CHECK_OPTIONS = {
  agents: { type: 'string', arg: 'MODULE', desc: 'check the contracts of its defineAgent handlers too (default: agents.mjs beside a workflow.yaml, or in the directory named)' },
  contracts: { type: 'string', arg: 'DIR', desc: 'check every contract file under DIR on its own (no workflow)' },
  json: { ...JSON_OPTION, desc: 'the same as --format json' },
  format: FORMAT_OPTION,
} as const satisfies OptionTable;

export const TYPES_OPTIONS = {
  output: { type: 'string', short: 'o', arg: 'OUT.ts', desc: 'write the types to OUT.ts', shown: 'stdout' },
  'baton-module': { type: 'string', arg: 'NAME', desc: 'the module the generated file imports Baton from', shown: '@baton-run/baton' },
  json: { ...JSON_OPTION, desc: 'print {"file", "phases", "types"} (or {"wrote"} with -o) as JSON' },
} as const satisfies OptionTable;

export const RUN_OPTIONS = {
  ...BINDING_OPTIONS,
  ...STORE_OPTIONS,
  'auto-approve': { type: 'boolean', default: false, desc: 'approve every gate as it opens (recorded as automatic)' },
  llm: { type: 'string', multiple: true, arg: 'AGENT', desc: 'run AGENT on a model with its outputs enforced; repeatable' },
  'llm-agents': { type: 'boolean', default: false, desc: 'run every agent that is still unbound on a model (docs/llm-agents.md)' },
  replies: { type: 'string', arg: 'FILE', desc: 'play model replies from FILE (the scripted provider) instead of calling a provider' },
  'state-out': { type: 'string', arg: 'FILE', desc: 'keep FILE current with the run in the contract spec’s workflow-state shape' },
  'run-id': { type: 'string', arg: 'ID', desc: 'start with this id; a second start with the same id is refused (exit 2)', shown: 'a new id' },
  detach: { type: 'boolean', default: false, desc: 'only store the run and print its id (a `baton worker` or `baton resume` runs it)' },
  trigger: { type: 'string', arg: 'JSON|@FILE', desc: 'the trigger payload', shown: 'trigger.json beside the workflow' },
  'initial-state': { type: 'string', arg: 'JSON|@FILE', desc: 'run-level values for $initial_state.* keys a phase does not set' },
  output: OUTPUT_OPTION,
  json: { ...JSON_OPTION, desc: 'print the run result as JSON on stdout (progress goes to stderr)' },
  concurrency: CONCURRENCY_OPTION,
  workspace: { ...WORKSPACE_OPTION, shown: 'the workflow file’s folder; for a bundled example that writes files, installed, a copy of it in ./NAME' },
  timeout: { type: 'string', arg: 'SECONDS', desc: 'timeout for the whole run', shown: 'governance.timeout_hours' },
  quiet: QUIET_OPTION,
  'store-retry': STORE_RETRY_OPTION,
  server: { type: 'string', arg: 'URL', desc: 'run on a Baton server (`baton serve`) instead of here: post the run and follow its events' },
  'api-key': { type: 'string', arg: 'KEY', desc: 'the API key for --server', shown: 'BATON_API_KEY' },
} as const satisfies OptionTable;

export const RUNS_OPTIONS = {
  ...STORE_OPTIONS,
  status: { type: 'string', multiple: true, arg: 'STATUS', desc: 'only runs in this state (repeatable, or comma-separated)', choices: ['running', 'waiting', 'completed', 'failed', 'cancelled'] },
  workflow: { type: 'string', arg: 'NAME', desc: 'only runs of this workflow (its info.name)' },
  limit: { type: 'string', arg: 'N', desc: 'at most N runs, newest first', shown: '100' },
  json: JSON_OPTION,
} as const satisfies OptionTable;

export const SHOW_OPTIONS = {
  ...STORE_OPTIONS,
  events: { type: 'boolean', default: false, desc: 'the event log too' },
  json: JSON_OPTION,
  state: { type: 'boolean', default: false, desc: 'the run in the agent-contract spec’s workflow-state shape (JSON)' },
  artifacts: { type: 'boolean', default: false, desc: 'the files the run staged, synced, read or wrote: phase, attempt, item, key, path, sha256, size' },
  items: { type: 'string', arg: 'PHASE', desc: 'the items of a for_each phase: index, status, attempts, output or failure' },
  offset: { type: 'string', arg: 'N', desc: 'with --items: start at item index N', shown: '0' },
  limit: { type: 'string', arg: 'N', desc: 'with --items: at most N items', shown: 'all' },
} as const satisfies OptionTable;

export const RESUME_OPTIONS = {
  ...BINDING_OPTIONS,
  ...STORE_OPTIONS,
  json: { ...JSON_OPTION, desc: 'print the run result as JSON on stdout (progress goes to stderr)' },
  output: OUTPUT_OPTION,
  quiet: QUIET_OPTION,
  concurrency: CONCURRENCY_OPTION,
  workspace: { ...WORKSPACE_OPTION, shown: 'the one the run recorded' },
  'store-retry': STORE_RETRY_OPTION,
} as const satisfies OptionTable;

export const RERUN_OPTIONS = {
  ...RESUME_OPTIONS,
  from: { type: 'string', arg: 'PHASE', desc: 'the phase to run again, with everything after it (required)' },
  'run-id': { type: 'string', arg: 'ID', desc: 'the new run’s id', shown: 'a new id' },
  detach: { type: 'boolean', default: false, desc: 'only store the new run and print its id' },
  'failed-items': { type: 'boolean', default: false, desc: 'with a for_each PHASE: run only its failed or skipped items again, keep the others' },
  'no-auto-approve': { type: 'boolean', default: false, desc: 'ask at every gate, though the first run was started with --auto-approve (a rerun approves as the first run did)' },
} as const satisfies OptionTable;

export const WORKER_OPTIONS = {
  ...BINDING_OPTIONS,
  ...STORE_OPTIONS,
  concurrency: CONCURRENCY_OPTION,
  workspace: { ...WORKSPACE_OPTION, shown: 'the one each run recorded' },
  lease: { type: 'string', arg: 'SECONDS', desc: 'how long a claimed attempt is this worker’s before another may take it', shown: '30' },
  'store-retry': STORE_RETRY_OPTION,
  quiet: { ...QUIET_OPTION, desc: 'no event lines' },
  json: { ...JSON_OPTION, desc: 'print the start and every event as a JSON line on stdout' },
} as const satisfies OptionTable;

export const SERVE_OPTIONS = {
  ...BINDING_OPTIONS,
  ...STORE_OPTIONS,
  port: { type: 'string', arg: 'N', desc: 'the port to listen on (0: any free port)', shown: '8080' },
  host: { type: 'string', arg: 'ADDRESS', desc: 'the address to listen on; without keys only loopback is allowed', shown: '127.0.0.1' },
  keys: { type: 'string', arg: 'FILE', desc: 'API keys and roles, JSON (docs/server.md); BATON_API_KEYS adds more' },
  workflows: { type: 'string', arg: 'DIR', desc: 'offer the workflows in DIR by name (POST /runs {"workflow_name": ...})' },
  'body-limit': { type: 'string', arg: 'BYTES', desc: 'largest request body accepted', shown: '1048576' },
  'file-limit': { type: 'string', arg: 'BYTES', desc: 'largest AIP-16 file a remote agent may upload (PUT /tasks/TOKEN/files/KEY)', shown: '67108864' },
  remote: { type: 'string', multiple: true, arg: 'ID', desc: 'serve agent ID to remote agents (POST /agents/ID/claim), as `x-remote: true` does; repeatable' },
  a2a: { type: 'boolean', desc: 'publish the --workflows as one A2A agent (card at /.well-known/agent-card.json, JSON-RPC at /a2a; needs @a2a-js/sdk)' },
  concurrency: CONCURRENCY_OPTION,
  lease: WORKER_OPTIONS.lease,
  'store-retry': STORE_RETRY_OPTION,
  quiet: { ...QUIET_OPTION, desc: 'no event lines' },
  json: { ...JSON_OPTION, desc: 'print the start and every event as a JSON line on stdout' },
} as const satisfies OptionTable;

/** `--server URL --api-key KEY`: decide or cancel through a Baton server (`baton serve`) instead of a store here. */
const SERVER_CLIENT_OPTIONS = {
  server: { type: 'string', arg: 'URL', desc: 'a run on a Baton server (`baton serve`): act through its API, as the API key’s name' },
  'api-key': { type: 'string', arg: 'KEY', desc: 'the API key for --server', shown: 'BATON_API_KEY' },
} as const satisfies OptionTable;

export const DECIDE_OPTIONS = {
  ...STORE_OPTIONS,
  ...SERVER_CLIENT_OPTIONS,
  as: { type: 'string', arg: 'NAME', desc: 'who decides', shown: 'BATON_USER, USER or LOGNAME' },
  comment: { type: 'string', arg: 'TEXT', desc: 'a comment kept with the decision' },
  json: JSON_OPTION,
} as const satisfies OptionTable;

export const RESPOND_OPTIONS = {
  ...STORE_OPTIONS,
  ...SERVER_CLIENT_OPTIONS,
  value: { type: 'string', arg: 'JSON', desc: 'the answer (a string is written \'"yes"\'; a bare word that is one of the gate’s choices works too)' },
  as: DECIDE_OPTIONS.as,
  json: JSON_OPTION,
} as const satisfies OptionTable;

export const CANCEL_OPTIONS = {
  ...STORE_OPTIONS,
  ...SERVER_CLIENT_OPTIONS,
  reason: { type: 'string', arg: 'TEXT', desc: 'why, kept with the run', shown: 'cancelled by USER' },
  json: JSON_OPTION,
} as const satisfies OptionTable;

export const LIST_OPTIONS = { json: JSON_OPTION } as const satisfies OptionTable;

export const NEW_OPTIONS = {
  dir: { type: 'string', arg: 'DIR', desc: 'where to write the files', shown: 'the name as a folder, e.g. weekly-digest' },
  json: { ...JSON_OPTION, desc: 'print {"name", "dir", "files"} as JSON' },
} as const satisfies OptionTable;

export const NO_OPTIONS = {} as const satisfies OptionTable;

/** Options every command takes; main handles them before the command runs. */
export const GLOBAL_OPTIONS = {
  help: { type: 'boolean', short: 'h', desc: 'this help' },
  color: { type: 'string', arg: 'WHEN', desc: 'colour: auto (a terminal, unless NO_COLOR), always or never', shown: 'auto', choices: ['auto', 'always', 'never'] },
} as const satisfies OptionTable;

export const COMMANDS: readonly CommandSpec[] = [
  { name: 'validate', args: 'FILE|DIR|EXAMPLE...', summary: 'check workflows: every problem, with file:line:col and a hint', options: VALIDATE_OPTIONS },
  { name: 'check', args: 'FILE|DIR|EXAMPLE', summary: 'agent contracts: the verdict of every binding and edge', options: CHECK_OPTIONS, alsoUsage: ['--contracts DIR'] },
  { name: 'types', args: 'FILE|DIR|EXAMPLE', summary: 'TypeScript types of every phase’s input and output, and a typed defineHandlers', options: TYPES_OPTIONS },
  { name: 'run', args: 'FILE|DIR|EXAMPLE', summary: 'run a workflow end to end', options: RUN_OPTIONS },
  { name: 'runs', args: '', summary: 'list the runs in the store', options: RUNS_OPTIONS },
  { name: 'show', args: 'RUN', summary: 'a run: status, phases (input, output, failure), warnings, gates, events', options: SHOW_OPTIONS },
  { name: 'resume', args: 'RUN', summary: 'continue a run (after a crash, Ctrl-C or a wait) in this process', options: RESUME_OPTIONS },
  { name: 'rerun', args: 'RUN', summary: 'a new run reusing every output upstream of --from PHASE', options: RERUN_OPTIONS },
  { name: 'worker', args: '', summary: 'run the ready tasks of every run in the store (PostgreSQL: many machines)', options: WORKER_OPTIONS },
  { name: 'serve', args: '', summary: 'an HTTP API for runs, gates and live events, with a worker (docs/server.md)', options: SERVE_OPTIONS },
  { name: 'approve', args: 'RUN GATE', summary: 'approve an approval gate', options: DECIDE_OPTIONS },
  { name: 'deny', args: 'RUN GATE', summary: 'deny an approval gate', options: DECIDE_OPTIONS },
  { name: 'respond', args: 'RUN GATE', summary: 'answer an input gate (ctx.requestInput, or retry|skip|fail on an escalation)', options: RESPOND_OPTIONS },
  { name: 'cancel', args: 'RUN', summary: 'cancel a run', options: CANCEL_OPTIONS },
  { name: 'list', args: '', summary: 'list the bundled examples', options: LIST_OPTIONS },
  { name: 'new', args: '"Name"', summary: 'write a commented starter workflow, its agents and a trigger', options: NEW_OPTIONS },
  { name: 'completion', args: 'bash|zsh|fish', summary: 'print a shell completion script', options: NO_OPTIONS },
  { name: 'help', args: '[COMMAND]', summary: 'this help, or a command’s', options: NO_OPTIONS },
];

export function commandSpec(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}
