/** `baton help`, `baton help CMD` and `CMD --help`, printed from the command table (spec.ts). */
import { COMMANDS, GLOBAL_OPTIONS, type CommandSpec, type OptionSpec } from './spec.js';

/** Every environment variable Baton reads. A test checks the source for names missing here. */
export const ENVIRONMENT: readonly { name: string; desc: string }[] = [
  { name: 'BATON_STORE', desc: 'the store when --store is not given: a SQLite file, postgres://..., or memory (default .baton/baton.db)' },
  { name: 'BATON_SQLITE', desc: 'the SQLite binding: node (node:sqlite, Node >= 22.13) or better-sqlite3 (default: node:sqlite when available)' },
  { name: 'BATON_STORE_RETRY', desc: 'seconds run, resume, rerun, worker and serve retry a failing store when --store-retry is not given (default 300)' },
  { name: 'BATON_CLOCK_OFFSET_MS', desc: 'testing aid: shifts the clock of run, resume, rerun and worker by N ms (a machine whose clock is wrong)' },
  { name: 'BATON_USER', desc: 'who approves, denies or answers a gate when --as is not given' },
  { name: 'USER', desc: 'who decides a gate when neither --as nor BATON_USER is set' },
  { name: 'LOGNAME', desc: 'the same, when USER is not set either' },
  { name: 'BATON_API_KEYS', desc: 'baton serve: API keys, NAME:ROLE:KEY separated by commas (roles admin, operator, reader, agent:ID)' },
  { name: 'BATON_API_KEY', desc: 'baton run --server: the key sent when --api-key is not given' },
  { name: 'BATON_MODULE_LOAD_TIMEOUT_MS', desc: 'how long loading an --agents module may take (default 30000)' },
  { name: 'NO_COLOR', desc: 'no colour when set and not empty (no-color.org)' },
  { name: 'FORCE_COLOR', desc: 'colour even on a pipe: empty, true or 1-3; 0 or false turn it off (--color wins over it)' },
  { name: 'TERM', desc: '`dumb` turns colour off on a terminal' },
  { name: 'COLUMNS', desc: 'the width code frames fit in when the stream is not a terminal that reports one' },
  { name: 'OPENAI_API_KEY', desc: 'LLM agents on `provider: openai` (and `provider: env`, first)' },
  { name: 'OPENAI_BASE_URL', desc: 'another endpoint for `provider: openai`' },
  { name: 'ANTHROPIC_API_KEY', desc: 'LLM agents on `provider: anthropic` (and `provider: env`)' },
  { name: 'ANTHROPIC_BASE_URL', desc: 'another endpoint for `provider: anthropic`' },
  { name: 'OPENAI_COMPATIBLE_BASE_URL', desc: 'the endpoint of `provider: openai-compatible` when the workflow names none' },
  { name: 'OPENAI_COMPATIBLE_API_KEY', desc: 'its key, when it needs one' },
  { name: 'OTEL_TRACES_EXPORTER', desc: 'traces (docs/telemetry.md): `otlp`, `console` or `none`, comma-separated; naming one turns tracing on' },
  { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', desc: 'the OTLP collector (http/protobuf, `/v1/traces` added); setting it turns tracing on' },
  { name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', desc: 'the same for traces only (the full URL)' },
  { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', desc: 'must be `http/protobuf` (the default) when set' },
  { name: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', desc: 'the same for traces only' },
  { name: 'OTEL_SDK_DISABLED', desc: '`true`: no tracing, whatever else is set' },
  { name: 'OTEL_SERVICE_NAME', desc: 'the service.name of the traces (default `baton`; `OTEL_RESOURCE_ATTRIBUTES` is read too)' },
  { name: 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT', desc: '`true`: model-call and tool spans record prompts, replies, tool arguments and results (off by default)' },
  { name: 'TRACEPARENT', desc: 'baton run: a W3C traceparent the trace of the run continues (recorded with the run)' },
  { name: '${VAR}', desc: 'any variable a workflow names in `mcp.servers.*.env` or `mcp.servers.*.headers`; subprocess agents and MCP servers inherit the environment' },
];

export function environmentHelp(): string {
  const w = Math.max(...ENVIRONMENT.map((e) => e.name.length));
  return `Environment:\n${ENVIRONMENT.map((e) => `  ${e.name.padEnd(w)}  ${e.desc}`).join('\n')}\n`;
}

function usageOf(c: CommandSpec): string {
  const opts = Object.keys(c.options).length > 0 ? ' [options]' : '';
  return `baton ${c.name}${c.args ? ` ${c.args}` : ''}${opts}`;
}

export function globalHelp(): string {
  const lines = COMMANDS.map((c) => `  ${(c.name + (c.args ? ` ${c.args}` : '')).padEnd(30)} ${c.summary}`);
  return `baton — runs OpenIntent Workflow YAML 1.0 pipelines; the executor owns the contract between phases.

Usage: baton COMMAND [options]      baton help COMMAND (or baton COMMAND --help) lists a command's options

Commands:
${lines.join('\n')}

Options of every command:
${optionLines({ ...GLOBAL_OPTIONS, version: { type: 'boolean', short: 'v', desc: 'print the version' } })}

Exit codes: 0 success, 1 invalid workflow (validate, check, types), failed run, or a refused decision (approve, deny, respond, cancel: gate already decided, run ended), 2 usage error or unreadable/invalid input.

${environmentHelp()}`;
}

function optionHead(name: string, o: OptionSpec): string {
  return `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`;
}

function optionLines(options: Readonly<Record<string, OptionSpec>>): string {
  const entries = Object.entries(options);
  const pad = Math.max(28, ...entries.map(([name, o]) => optionHead(name, o).length + 1));
  return entries
    .map(([name, o]) => {
      const extra = [o.choices && !o.choices.every((x) => o.desc.includes(x)) ? `one of ${o.choices.join(', ')}` : '', o.shown ? `default: ${o.shown}` : '', o.multiple ? 'repeatable' : ''].filter((x) => x && !o.desc.includes(x));
      return `  ${optionHead(name, o).padEnd(pad)} ${o.desc}${extra.length > 0 ? ` (${extra.join('; ')})` : ''}`;
    })
    .join('\n');
}

export function commandHelp(c: CommandSpec): string {
  const usage = [usageOf(c), ...(c.alsoUsage ?? []).map((u) => `baton ${c.name} ${u} [options]`)];
  const own = Object.keys(c.options).length > 0 ? `Options:\n${optionLines(c.options)}\n` : '';
  return `Usage: ${usage.join('\n       ')}\n\n${c.summary}\n\n${own}${own ? '\n' : ''}Options of every command:\n${optionLines(GLOBAL_OPTIONS)}\n`;
}

/** The usage line of a command, for a usage error. */
export function usageLine(c: CommandSpec): string {
  return `Usage: ${usageOf(c)}   (baton ${c.name} --help lists the options)\n`;
}
