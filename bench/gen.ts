/** Generators of large workflows for the benchmarks. */

export type Shape = 'chain' | 'fan' | 'lattice';

const HEADER = `openintent: "1.0"
info:
  name: "Generated"
types:
  Finding:
    source: string
    content: string
    confidence: number
  Level:
    enum: [low, medium, high]
workflow:
`;

/** A realistic phase: typed outputs, wiring from earlier phases, retry, constraints. */
export function generateWorkflow(n: number, shape: Shape = 'lattice', width = 100): string {
  const parts: string[] = [HEADER];
  for (let i = 0; i < n; i++) {
    const deps = depsOf(i, n, shape, width);
    let s = `  p${i}:\n    title: "Phase ${i}"\n    description: "Step ${i} of the generated pipeline"\n    assign: agent-${i % 10}\n`;
    if (deps.length > 0) {
      s += `    depends_on: [${deps.map((d) => `p${d}`).join(', ')}]\n    inputs:\n`;
      deps.slice(0, 2).forEach((d, k) => (s += `      in${k}: p${d}.findings\n`));
      s += `      topic: $trigger.topic\n`;
    } else {
      s += `    inputs:\n      topic: $trigger.topic\n`;
    }
    s += `    outputs:\n      findings: Finding[]\n      level: Level\n      note:\n        type: string\n        required: false\n`;
    parts.push(s);
  }
  return parts.join('');
}

export function depsOf(i: number, n: number, shape: Shape, width: number): number[] {
  switch (shape) {
    case 'chain':
      return i === 0 ? [] : [i - 1];
    case 'fan':
      // p0 fans out to everything in the middle; the last phase fans in... from a bounded sample so the
      // YAML stays linear in size: middle phases feed a collector every `width`, collectors feed the last.
      if (i === 0) return [];
      if (i === n - 1) return Array.from({ length: Math.ceil((n - 2) / width) }, (_, k) => Math.min(n - 2, (k + 1) * width)).filter((d, k, a) => d > 0 && a.indexOf(d) === k);
      if (i % width === 0 || i === n - 2) return Array.from({ length: Math.min(width, i) - 1 }, (_, k) => i - 1 - k).filter((d) => d > 0);
      return [0];
    case 'lattice': {
      const layer = Math.floor(i / width);
      if (layer === 0) return [];
      const pos = i % width;
      const prev = (layer - 1) * width;
      return [prev + pos, prev + ((pos + 1) % width)];
    }
  }
}
