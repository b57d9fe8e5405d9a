// Agents for the contracts example: deterministic stand-ins. The architect and the drafter are typed by the
// generated workflow.types.ts (`npx baton types workflow.yaml -o workflow.types.ts`); the editor is a
// defineAgent carrying its own contract (checked by `baton check --agents`, enforced when it runs).
import { defineAgent, defineIO } from 'baton';
import { defineHandlers } from './workflow.types.js';

const handlers = defineHandlers({
  architect: (ctx) => ({
    outline: { title: `On ${String(ctx.input.topic)}`, sections: ['introduction', 'method', 'results'] },
    research: [{ source: 'field-notes', citations: ['smith2020', 'lee2021'] }],
  }),
  'section-drafter': (ctx) => ({
    draftContent: `\\section{${String(ctx.input.sectionName)}} ${ctx.input.outline.title}: ${ctx.input.research.flatMap((r) => r.citations).join(', ')}`,
    completionStatus: 'complete',
  }),
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
