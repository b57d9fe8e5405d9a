/**
 * A command that fails says so in one line on stderr; with `--json` it also prints
 * `{"error": {"code", "message", ...}}` on stdout, so a script reads every outcome from stdout.
 */
import { safeText } from '../diagnostics/terminal.js';
import type { CliIo } from './io.js';

/** Codes of CLI failures beside BatonError's: `usage` (the command line), `agents-module`, `invalid-workflow`, ... */
export function printFailure(io: CliIo, cmd: string, code: string, message: string, extra: Record<string, unknown> = {}): void {
  io.stderr(`baton${cmd ? ` ${cmd}` : ''}: ${safeText(message, 4000, { keepNewlines: true })}\n`);
  if (io.json) io.stdout(JSON.stringify({ error: { code, message, ...(cmd ? { command: cmd } : {}), ...extra } }, null, 2) + '\n');
}
