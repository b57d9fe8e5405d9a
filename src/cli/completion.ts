/**
 * `baton completion bash|zsh|fish`: a completion script built from the command table (spec.ts):
 * commands, each command's flags, the values of flags with a closed list, files where a flag takes
 * one, and the bundled examples where a workflow is expected.
 */
import { listExamples } from './examples.js';
import { printFailure } from './fail.js';
import type { CliIo } from './io.js';
import { COMMANDS, GLOBAL_OPTIONS, type CommandSpec, type OptionSpec } from './spec.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

/** Commands whose positional arguments are workflows (a file, a directory or a bundled example): those whose usage says so. */
const TAKES_WORKFLOW = new Set(COMMANDS.filter((c) => c.args.includes('EXAMPLE')).map((c) => c.name));

function optionsOf(c: CommandSpec): [string, OptionSpec][] {
  return Object.entries({ ...c.options, ...GLOBAL_OPTIONS });
}

/** What a flag's value completes to: its choices, files, directories, or nothing. */
function valueKind(o: OptionSpec): { choices: readonly string[] } | 'file' | 'dir' | 'none' {
  if (o.choices) return { choices: o.choices };
  if (o.arg === 'DIR') return 'dir';
  if (o.arg !== undefined && /FILE|MODULE|OUT/.test(o.arg)) return 'file';
  return 'none';
}

function examples(): string[] {
  return listExamples().filter((n) => /^[A-Za-z0-9._-]+$/.test(n));
}

export function bashScript(): string {
  const names = COMMANDS.map((c) => c.name).join(' ');
  const perCommand = COMMANDS.map((c) => {
    const flags = optionsOf(c).flatMap(([n, o]) => [`--${n}`, ...(o.short ? [`-${o.short}`] : [])]);
    return `    ${c.name}) flags="${flags.join(' ')}" ;;`;
  }).join('\n');
  const values = new Map<string, string>();
  for (const c of COMMANDS) {
    for (const [n, o] of optionsOf(c)) {
      const k = valueKind(o);
      const line = typeof k === 'object' ? `COMPREPLY=( $(compgen -W "${k.choices.join(' ')}" -- "$cur") ); return 0 ;;` : k === 'file' ? 'COMPREPLY=( $(compgen -f -- "$cur") ); return 0 ;;' : k === 'dir' ? 'COMPREPLY=( $(compgen -d -- "$cur") ); return 0 ;;' : o.type === 'string' ? 'COMPREPLY=(); return 0 ;;' : undefined;
      if (line !== undefined && !values.has(`--${n}`)) values.set(`--${n}`, line);
    }
  }
  const valueCases = [...values].map(([flag, line]) => `    ${flag}${flag === '--output' ? '|-o' : ''}) ${line}`).join('\n');
  return `# bash completion for baton. Load it with:  source <(baton completion bash)
# or save it:  baton completion bash > ~/.local/share/bash-completion/completions/baton
_baton() {
  local cur prev cmd flags
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  cmd="\${COMP_WORDS[1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${names} --help --version" -- "$cur") )
    return 0
  fi
  case "$prev" in
${valueCases}
  esac
  case "$cmd" in
${perCommand}
    *) flags="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
    return 0
  fi
  case "$cmd" in
    ${[...TAKES_WORKFLOW].join('|')}) COMPREPLY=( $(compgen -W "${examples().join(' ')}" -- "$cur") $(compgen -f -- "$cur") ) ;;
    completion) COMPREPLY=( $(compgen -W "${SHELLS.join(' ')}" -- "$cur") ) ;;
    help) COMPREPLY=( $(compgen -W "${names} environment" -- "$cur") ) ;;
    *) COMPREPLY=() ;;
  esac
  return 0
}
complete -o filenames -F _baton baton
`;
}

/** Text inside a zsh `_arguments` spec or `_describe` entry: no brackets, colons or quotes. */
function zshText(s: string): string {
  return s.replace(/[[\]]/g, (b) => (b === '[' ? '(' : ')')).replace(/:/g, ' -').replace(/'/g, '’').replace(/\\/g, '/').replace(/`/g, '');
}

export function zshScript(): string {
  const described = COMMANDS.map((c) => `    '${c.name}:${zshText(c.summary)}'`).join('\n');
  const cases = COMMANDS.map((c) => {
    const specs = optionsOf(c).map(([n, o]) => {
      const k = valueKind(o);
      const action = typeof k === 'object' ? `(${k.choices.join(' ')})` : k === 'file' ? '_files' : k === 'dir' ? '_files -/' : ' ';
      const value = o.type === 'string' ? `:${zshText(o.arg ?? 'value')}:${action}` : '';
      const desc = `[${zshText(o.desc)}]`;
      if (o.short) return `'(-${o.short} --${n})'{-${o.short},--${n}}'${desc}${value}'`;
      return `'${o.multiple ? '*' : ''}--${n}${desc}${value}'`;
    });
    const rest = TAKES_WORKFLOW.has(c.name) ? `'*:workflow:_baton_workflows'` : c.name === 'completion' ? `'1:shell:(${SHELLS.join(' ')})'` : c.name === 'help' ? `'1:command:(${COMMANDS.map((x) => x.name).join(' ')} environment)'` : `'*::'`;
    return `    ${c.name})\n      _arguments -s \\\n        ${[...specs, rest].join(' \\\n        ')} ;;`;
  }).join('\n');
  return `#compdef baton
# zsh completion for baton. Load it with:  source <(baton completion zsh)
# or save it as _baton in a directory of your $fpath.
_baton_workflows() {
  local -a ex
  ex=(${examples().join(' ')})
  _alternative 'examples:bundled example:(\${ex})' 'files:workflow file:_files'
}
_baton() {
  local -a commands
  commands=(
${described}
  )
  if (( CURRENT == 2 )); then
    _describe -t commands 'baton command' commands
    return
  fi
  local cmd=\${words[2]}
  shift words
  (( CURRENT-- ))
  case $cmd in
${cases}
  esac
}
if [[ \${zsh_eval_context[-1]} == loadautofunc ]]; then
  _baton "$@"
else
  compdef _baton baton
fi
`;
}

function fishText(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

export function fishScript(): string {
  const lines = ['# fish completion for baton. Load it with:  baton completion fish | source', '# or save it:  baton completion fish > ~/.config/fish/completions/baton.fish', 'complete -c baton -f'];
  for (const c of COMMANDS) lines.push(`complete -c baton -n __fish_use_subcommand -a ${c.name} -d ${fishText(c.summary)}`);
  for (const c of COMMANDS) {
    const when = `-n '__fish_seen_subcommand_from ${c.name}'`;
    for (const [n, o] of optionsOf(c)) {
      const k = valueKind(o);
      const value = o.type === 'boolean' ? '' : typeof k === 'object' ? ` -x -a ${fishText(k.choices.join(' '))}` : k === 'file' || k === 'dir' ? ' -r -F' : ' -x';
      lines.push(`complete -c baton ${when}${o.short ? ` -s ${o.short}` : ''} -l ${n}${value} -d ${fishText(o.desc)}`);
    }
    if (TAKES_WORKFLOW.has(c.name)) lines.push(`complete -c baton ${when} -F -a ${fishText(examples().join(' '))}`);
  }
  lines.push(`complete -c baton -n '__fish_seen_subcommand_from completion' -a ${fishText(SHELLS.join(' '))}`);
  lines.push(`complete -c baton -n '__fish_seen_subcommand_from help' -a ${fishText([...COMMANDS.map((c) => c.name), 'environment'].join(' '))}`);
  return lines.join('\n') + '\n';
}

export function completionCommand(args: string[], io: CliIo): Promise<number> {
  const shell = args[0];
  if (args.length !== 1 || !SHELLS.includes(shell as Shell)) {
    printFailure(io, 'completion', 'usage', `name a shell: ${SHELLS.join(', ')}${shell !== undefined ? ` (got \`${shell}\`)` : ''}`);
    return Promise.resolve(2);
  }
  io.stdout(shell === 'bash' ? bashScript() : shell === 'zsh' ? zshScript() : fishScript());
  return Promise.resolve(0);
}
