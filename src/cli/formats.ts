/** `--format text|json|sarif|github` of `baton validate` and `baton check`; `--json` is `--format json`. */
import { toGithub } from '../diagnostics/github.js';
import { toSarif, type FileReport } from '../diagnostics/sarif.js';
import type { CliIo } from './io.js';
import { packageVersion } from './version.js';

export type Format = 'text' | 'json' | 'sarif' | 'github';

export function formatOf(values: { json?: boolean | undefined; format?: string | undefined }): Format | { error: string } {
  const f = values.format ?? (values.json ? 'json' : 'text');
  if (f !== 'text' && f !== 'json' && f !== 'sarif' && f !== 'github') return { error: `--format expects text, json, sarif or github, got \`${f}\`` };
  if (values.json && f !== 'json') return { error: `--json and --format ${f} ask for two formats; give one` };
  return f;
}

export async function printMachineFormat(format: 'sarif' | 'github', reports: readonly FileReport[], io: CliIo): Promise<void> {
  if (format === 'github') io.stdout(toGithub(reports));
  else io.stdout(JSON.stringify(toSarif(reports, { toolVersion: await packageVersion(), cwd: io.cwd }), null, 2) + '\n');
}
