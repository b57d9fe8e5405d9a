/** `baton new "Name"`: a commented starter workflow, its agents and a trigger, that validates and runs. */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { makeDirs } from '../core/make-dirs.js';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { escapeControls } from '../diagnostics/terminal.js';
import { printFailure } from './fail.js';
import type { CliIo } from './io.js';
import { NEW_OPTIONS } from './spec.js';

/** Letters that do not decompose into a base letter and marks. */
const LATIN: Record<string, string> = { ø: 'o', æ: 'ae', œ: 'oe', ß: 'ss', đ: 'd', ð: 'd', ł: 'l', þ: 'th', ı: 'i', ħ: 'h', ŀ: 'l' };

/**
 * A folder name for a workflow name: accents dropped (`Ünïcødé` -> `unicode`), other letters and
 * digits of any script kept (`東京` stays), everything else (spaces, emoji, punctuation) a dash.
 */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/(?<=\p{Script=Latin})\p{M}+/gu, '') // accents of Latin letters only: a Japanese voicing mark is part of the letter
    .normalize('NFC')
    .toLowerCase()
    .replace(/[øæœßđðłþıħŀ]/g, (c) => LATIN[c] ?? c)
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return slug || 'workflow';
}

/** A path as a POSIX shell reads it: bare when safe, else single-quoted. */
export function shellQuote(s: string): string {
  return /^[\p{L}\p{N}_./:@%+=,-]+$/u.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function starterWorkflow(name: string): string {
  return `openintent: "1.0"

# ${escapeControls(name)}: a starter workflow written by \`baton new\`.
# Check it:  npx baton validate <this file>      Run it:  npx baton run <this folder>

info:
  name: ${JSON.stringify(name)}
  version: "0.1.0"
  description: "Research a topic, then summarise it"

# Agents named by \`assign\`. Their handlers are in agents.mjs beside this file
# (or bind any agent to a subprocess with \`x-command: "python3 agent.py"\`).
agents:
  researcher:
    description: "Collects notes on the topic"
  summarizer:
    description: "Writes a short summary"

# Named types: records, enums, aliases; use them in outputs (\`Note[]\`, \`array<Note>\`).
types:
  Note:
    text: string
    relevance: number

workflow:
  research:
    title: "Research"
    assign: researcher
    inputs:
      topic: $trigger.topic          # from the run's trigger payload (trigger.json)
    outputs:
      notes: Note[]                  # checked deeply when the agent returns
    retry:
      max_attempts: 2
      backoff: exponential
      initial_delay_ms: 500

  summarize:
    title: "Summarize"
    assign: summarizer
    depends_on: [research]           # runs once research has completed
    inputs:
      notes: research.notes          # wired by the executor into ctx.input.notes
    outputs:
      summary: string
`;
}

const STARTER_AGENTS = `// Handlers for the starter workflow: each gets exactly its declared ctx.input and returns a plain object.
export default {
  researcher: async (ctx) => ({
    notes: [
      { text: \`What \${ctx.input.topic} is\`, relevance: 0.9 },
      { text: \`Why \${ctx.input.topic} matters\`, relevance: 0.7 },
    ],
  }),
  summarizer: async (ctx) => ({
    summary: ctx.input.notes.map((n) => n.text).join('; '),
  }),
};
`;

export async function newCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: NEW_OPTIONS, allowPositionals: true });
  const name = positionals.join(' ').trim();
  if (!name) {
    printFailure(io, 'new', 'usage', 'give the workflow a name, e.g. baton new "Weekly Digest"');
    return 2;
  }
  const dir = resolve(io.cwd, values.dir ?? slugify(name));
  const wf = join(dir, 'workflow.yaml');
  if (existsSync(wf)) {
    printFailure(io, 'new', 'usage', `${relative(io.cwd, wf) || wf} already exists; choose another name or --dir`);
    return 2;
  }
  try {
    makeDirs(dir);
    await writeFile(wf, starterWorkflow(name));
    await writeFile(join(dir, 'agents.mjs'), STARTER_AGENTS);
    await writeFile(join(dir, 'trigger.json'), JSON.stringify({ topic: 'multi-agent pipelines' }, null, 2) + '\n');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOTDIR' || code === 'EEXIST' ? 'a part of the path is a file, not a directory' : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'EROFS' ? 'the file system is read-only' : code === 'ENOENT' ? 'the folder cannot be created there (a broken link, or a file system that takes no folders)' : (code ?? (e as Error).message);
    printFailure(io, 'new', 'usage', `cannot write ${relative(io.cwd, dir) || dir}: ${why}`);
    return 2;
  }
  const rel = relative(io.cwd, dir) || '.';
  if (io.json) {
    io.stdout(JSON.stringify({ name, dir: rel, files: ['workflow.yaml', 'agents.mjs', 'trigger.json'].map((f) => `${rel}/${f}`) }, null, 2) + '\n');
    return 0;
  }
  // the next steps are commands to paste: quoted when the folder name needs it
  io.stdout(`created ${rel}/workflow.yaml, ${rel}/agents.mjs and ${rel}/trigger.json\n\n  npx baton validate ${shellQuote(`${rel}/workflow.yaml`)}\n  npx baton run ${shellQuote(rel)}\n`);
  return 0;
}
