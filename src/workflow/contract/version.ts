/** Semantic versions through `semver` (SemVer 2.0.0 precedence: `1.0.0-beta.11` after `1.0.0-beta.2`). */
import { createRequire } from 'node:module';
import { SEMVER } from './shape.js';

// loaded at the first comparison (a contract with minAgentVersion): semver builds its regexes as it
// loads, which every command paid at start-up, most of them with no version to compare
let compare: ((a: string, b: string) => number) | undefined;

/** -1, 0, 1; undefined when either is not a strict `MAJOR.MINOR.PATCH[-pre][+build]` version (no `v`, no ranges). */
export function compareVersions(a: string, b: string): number | undefined {
  if (!SEMVER.test(a) || !SEMVER.test(b)) return undefined;
  compare ??= createRequire(import.meta.url)('semver/functions/compare.js') as (a: string, b: string) => number;
  return compare(a, b);
}
