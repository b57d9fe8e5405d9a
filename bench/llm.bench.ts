/**
 * parseAgentReply figures: a typical 2 KB model reply and a 50 KB one, clean (a fenced JSON block
 * in prose) and broken (unquoted keys, single quotes, trailing commas, comments, a truncated tail),
 * in microseconds per call. Target: under 100 µs for the 2 KB reply, so the loop never shows next to
 * a model call (hundreds of milliseconds). Prints figures; never fails on a timing.
 */
import { parseAgentReply } from '../src/agents/llm/reply.js';

const schema = {
  type: 'object',
  required: ['summary', 'approval', 'comments'],
  properties: {
    summary: { type: 'string' },
    approval: { type: 'string', enum: ['approve', 'request_changes', 'comment'] },
    comments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['file', 'line', 'severity', 'message'],
        properties: { file: { type: 'string' }, line: { type: 'integer' }, severity: { type: 'string', enum: ['nitpick', 'suggestion', 'concern', 'blocker'] }, message: { type: 'string' } },
      },
    },
  },
};

function value(bytes: number): Record<string, unknown> {
  const comments: Record<string, unknown>[] = [];
  const v = { summary: 'The change is sound overall; a few places need care before it merges.', approval: 'request_changes', comments };
  for (let i = 0; JSON.stringify(v, null, 2).length < bytes - 200; i++) {
    comments.push({ file: `src/module${i % 7}.ts`, line: 10 + i, severity: ['nitpick', 'suggestion', 'concern', 'blocker'][i % 4]!, message: `Comment ${i}: this branch does not handle an empty list, and the error it throws loses the cause.` });
  }
  return v;
}

function clean(bytes: number): string {
  return `I reviewed the diff. Here is the result:\n\n\`\`\`json\n${JSON.stringify(value(bytes), null, 2)}\n\`\`\`\n\nLet me know if you want more detail.`;
}

function broken(bytes: number): string {
  // JSON5-ish: unquoted keys, single quotes, trailing commas, a comment, and the tail cut after the last item
  const text = JSON.stringify(value(bytes), null, 2)
    .replace(/"(\w+)":/g, '$1:')
    .replace(/"([^"\n]*)"/g, "'$1'")
    .replace(/\n(\s*)\}/g, ',\n$1}')
    .replace('summary:', '// the verdict first\n  summary:');
  return `Here you go:\n\`\`\`json\n${text.slice(0, text.lastIndexOf(']'))}\n\`\`\``;
}

function perCall(text: string): { us: number; ok: boolean; repairs: string } {
  const r0 = parseAgentReply(text, schema);
  const target = 200; // ms per measurement
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < target) {
    for (let i = 0; i < 10; i++) parseAgentReply(text, schema);
    n += 10;
  }
  const us = ((performance.now() - t0) * 1000) / n;
  return { us, ok: r0.ok, repairs: r0.ok ? r0.repairs.join(',') || '-' : `invalid: ${r0.errors[0]?.message ?? ''}` };
}

const rows: string[][] = [['reply', 'clean µs/call', 'broken µs/call', 'broken: repairs']];
for (const [label, bytes] of [['2 KB', 2_000], ['50 KB', 50_000]] as const) {
  const c = clean(bytes);
  const b = broken(bytes);
  for (let i = 0; i < 200; i++) parseAgentReply(c, schema); // warm-up (ajv compile, JIT)
  const rc = perCall(c);
  const rb = perCall(b);
  if (!rc.ok) throw new Error('the clean reply should validate');
  rows.push([`${label} (${(c.length / 1000).toFixed(1)} / ${(b.length / 1000).toFixed(1)} KB)`, rc.us.toFixed(1), rb.us.toFixed(1), rb.repairs]);
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('  '));
const twoKb = Number(rows[1]![1]);
console.log(`\ntarget: < 100 µs for the clean 2 KB reply: ${twoKb < 100 ? 'met' : 'NOT met'} (${twoKb.toFixed(1)} µs)`);
