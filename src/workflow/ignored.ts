/** Keys Baton accepts so that workflows written for the whole protocol load, and does not act on: said once each. */
import type { Path } from '../core/path.js';
import { warning, type Diagnostic } from '../diagnostics/diagnostic.js';

type Ignored = readonly (readonly [key: string, message: string, hint: string])[];

/** Top-level keys of other OpenIntent RFCs that Baton accepts and never acts on. */
const IGNORED_TOP_KEYS: Ignored = [
  ['channels', '`channels` (agent-to-agent messaging, RFC-0021) is accepted but not acted on: Baton does not create or relay channels', 'agents that message each other do it outside Baton; phases exchange data through `inputs` and `outputs`'],
];

/**
 * Phase keys of other OpenIntent RFCs that Baton accepts (so the file loads) and never acts on at run
 * time: each would lead a reader to expect a behaviour (a scope lock, files checked) that does not happen.
 */
const IGNORED_PHASE_KEYS: Ignored = [
  ['leasing', '`leasing` (scope leases, RFC-0003) is accepted but not acted on: Baton takes no lease on the scope, so phases with the same scope may run at the same time', 'to keep two phases from running at once, chain them with `depends_on`'],
  ['attachments', '`attachments` (RFC-0005) is accepted but not acted on: Baton neither checks nor stores the files it lists', 'declare the files an agent writes with `outputsFiles` (AIP-16): Baton syncs and records them'],
];

/** An `ignored-section` warning at each such key of the document (`at` []) or of a phase (`at` its path). */
export function reportIgnoredKeys(raw: Record<string, unknown>, at: Path, out: Diagnostic[]): void {
  for (const [key, message, hint] of at.length === 0 ? IGNORED_TOP_KEYS : IGNORED_PHASE_KEYS) {
    if (raw[key] !== undefined && raw[key] !== null) out.push(warning('ignored-section', [...at, key], message, { target: 'key', hint }));
  }
}
