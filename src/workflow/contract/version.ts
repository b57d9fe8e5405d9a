/** Semantic versions through `semver` (SemVer 2.0.0 precedence: `1.0.0-beta.11` after `1.0.0-beta.2`). */
import compare from 'semver/functions/compare.js';
import { SEMVER } from './shape.js';

/** -1, 0, 1; undefined when either is not a strict `MAJOR.MINOR.PATCH[-pre][+build]` version (no `v`, no ranges). */
export function compareVersions(a: string, b: string): number | undefined {
  if (!SEMVER.test(a) || !SEMVER.test(b)) return undefined;
  return compare(a, b);
}
