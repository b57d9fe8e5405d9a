/**
 * A command line checked against the command's table (spec.ts) before the command runs: unknown
 * flags are refused with "did you mean", a value outside an option's choices is named, and the
 * global flags (`--help`, `--color`) are taken out. Returns data; main prints it.
 */
import { parseArgs } from 'node:util';
import { didYouMean } from '../core/suggest.js';
import type { ColorMode } from './color.js';
import { GLOBAL_OPTIONS, type CommandSpec, type OptionTable } from './spec.js';

export type Flags =
  | { ok: true; help: boolean; color: ColorMode | undefined; json: boolean; format: string | undefined; args: string[] }
  | { ok: false; message: string; json: boolean };

export function checkFlags(spec: CommandSpec, args: string[]): Flags {
  const table: OptionTable = { ...spec.options, ...GLOBAL_OPTIONS };
  // `--json` decides how a failure is printed, even the failure to read the rest of the line
  const json = args.includes('--json') || args.includes('--format=json');
  const { tokens } = parseArgs({ args, options: table, strict: false, allowPositionals: true, tokens: true });
  const longs = Object.keys(table).map((n) => `--${n}`);
  const drop = new Set<number>();
  let help = false;
  let color: ColorMode | undefined;
  let format: string | undefined;
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') {
      positionals.push(t.value);
      continue;
    }
    if (t.kind !== 'option') continue;
    const o = table[t.name];
    if (!o) {
      const hint = t.rawName.startsWith('--') ? didYouMean(t.rawName, longs) : undefined;
      return { ok: false, json, message: `unknown option \`${t.rawName}\`${hint ? `; ${hint}` : ''} (see \`baton ${spec.name} --help\`)` };
    }
    if (o.type === 'boolean' && t.value !== undefined) return { ok: false, json, message: `${t.rawName} takes no value, got \`${t.value}\`` };
    if (o.type === 'string' && t.value === undefined) return { ok: false, json, message: `${t.rawName} needs a value${o.arg ? ` (${o.arg})` : ''}` };
    // no number Baton's options take is negative (most are positive; `--offset` may be 0): a mistake, not an option
    if (o.type === 'string' && t.inlineValue === false && t.value !== undefined && /^-\d/.test(t.value)) return { ok: false, json, message: `${t.rawName} expects ${o.arg === 'N' ? (o.shown === '0' ? 'a whole number (0 or more)' : 'a positive integer') : 'a positive number'}, got \`${t.value}\`` };
    if (o.type === 'string' && t.inlineValue === false && t.value?.startsWith('-')) {
      return { ok: false, json, message: `${t.rawName} needs a value${o.arg ? ` (${o.arg})` : ''}; a value starting with a dash is written ${t.rawName}=${t.value}` };
    }
    if (o.choices && t.value !== undefined) {
      for (const v of o.multiple ? t.value.split(',') : [t.value]) {
        if (!o.choices.includes(v)) {
          const hint = didYouMean(v, o.choices);
          return { ok: false, json, message: `--${t.name} expects ${listOf(o.choices)}, got \`${v}\`${hint ? `; ${hint}` : ''}` };
        }
      }
    }
    if (t.name === 'help') help = true;
    if (t.name === 'format') format = t.value;
    if (t.name === 'color') {
      color = t.value as ColorMode;
      drop.add(t.index);
      if (!t.inlineValue) drop.add(t.index + 1);
    }
  }
  if (!help && spec.args === '' && positionals.length > 0) return { ok: false, json, message: `${spec.name} takes no arguments, got \`${positionals[0]!}\`` };
  return { ok: true, help, color, json: json || format === 'json', format, args: args.filter((_, i) => !drop.has(i)) };
}

/** `a, b or c`. */
export function listOf(xs: readonly string[]): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]!}`;
}
