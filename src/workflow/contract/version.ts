/** Semantic versions: enough of semver 2.0 to compare `minAgentVersion` with an agent's version. */
import { SEMVER } from './shape.js';

/** -1, 0, 1; undefined when either is not a version. Pre-releases sort before their release. */
export function compareVersions(a: string, b: string): number | undefined {
  const ma = SEMVER.exec(a);
  const mb = SEMVER.exec(b);
  if (!ma || !mb) return undefined;
  for (let i = 1; i <= 3; i++) {
    const d = Number(ma[i]) - Number(mb[i]);
    if (d !== 0) return Math.sign(d);
  }
  const pa = a.split('+')[0]!.split('-').slice(1).join('-');
  const pb = b.split('+')[0]!.split('-').slice(1).join('-');
  if (pa === pb) return 0;
  if (pa === '') return 1;
  if (pb === '') return -1;
  return pa < pb ? -1 : 1;
}
