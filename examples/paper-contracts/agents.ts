// Agents for the contracts example: deterministic stand-ins. The architect, the drafter and the reviewer are
// typed by the generated workflow.types.ts (`npx baton types workflow.yaml -o workflow.types.ts`); the editor
// is a defineAgent carrying its own contract (checked by `baton check --agents` and `baton run`, enforced
// when it runs).
import { mkdir, writeFile } from 'node:fs/promises';
import { defineAgent, defineIO } from '@baton-run/baton';
import { defineHandlers } from './workflow.types.js';

/** Where the drafter writes its section: the contract's `filesWritten`, relative to the workflow's directory. */
const here = new URL('./', import.meta.url);

const handlers = defineHandlers({
  architect: (ctx) => ({
    outline: { title: `On ${String(ctx.input.topic)}`, sections: ['introduction', 'method', 'results'] },
    research: [{ source: 'field-notes', citations: ['smith2020', 'lee2021'] }],
  }),
  // Drafts one paragraph per outline section, saving a checkpoint after each. The first attempt stalls on the
  // last paragraph (as a slow model would) until the phase's timeout; the contract's
  // `onTimeout: checkpoint_and_retry` runs it again, and the retry starts from `ctx.lastCheckpoint`. The
  // results paragraph cannot be written yet: the draft is partial, with the gap flagged in `uncertainAreas`.
  'section-drafter': async (ctx) => {
    const saved = ctx.lastCheckpoint as { paragraphs?: string[] } | undefined;
    const paragraphs = [...(saved?.paragraphs ?? [])];
    const uncertainAreas: string[] = [];
    for (const part of ctx.input.outline.sections.slice(paragraphs.length)) {
      if (part === 'results') {
        if (ctx.attempt === 1) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        uncertainAreas.push('results: no data yet');
        break;
      }
      paragraphs.push(`${part}: ${ctx.input.research.flatMap((r) => r.citations).join(', ')}`);
      await ctx.checkpoint({ paragraphs });
    }
    const draftContent = `\\section{${String(ctx.input.sectionName)}} ${ctx.input.outline.title}. ${paragraphs.join('. ')}`;
    const file = new URL(`output-drafts/sections/${String(ctx.input.sectionName)}.tex`, here);
    await mkdir(new URL('./', file), { recursive: true });
    await writeFile(file, draftContent + '\n');
    return uncertainAreas.length > 0 ? { draftContent, completionStatus: 'partial', uncertainAreas } : { draftContent, completionStatus: 'complete' };
  },
  reviewer: (ctx) => ({ todo: ctx.input.gaps.map((g) => `fill in ${g}`) }),
});

const editor = defineAgent({
  id: 'editor',
  version: '2.0.0',
  io: defineIO({
    inputs: {
      type: 'object',
      required: ['draft', 'status'],
      properties: { draft: { type: 'string', minLength: 1 }, status: { enum: ['complete', 'partial', 'blocked'] } },
    },
    outputs: { type: 'object', required: ['final', 'words'], properties: { final: { type: 'string' }, words: { type: 'integer' } } },
  }),
  sideEffects: { filesRead: ['output-drafts/sections/*.tex'] },
  handler: (ctx) => {
    const input = ctx.input as { draft: string; status: string };
    const final = input.draft.replace(/\s+/g, ' ').trim();
    return { final, words: final.split(' ').length };
  },
});

export default { ...handlers, editor };
