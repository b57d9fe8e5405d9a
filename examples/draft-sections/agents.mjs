// Agents of the draft-sections example: deterministic stand-ins for writers, so the example runs anywhere.
// Each reads and writes plain files under the scratch root Baton stages for its attempt
// (`ctx.input._workflowFsRoot`): `<root>/<key>` for each declared input or output file.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 40).replace(/^-|-$/g, '');

export default {
  architect(ctx) {
    const brief = readFileSync(join(ctx.input._workflowFsRoot, 'brief'), 'utf8');
    const bullets = brief.split('\n').filter((l) => l.startsWith('- ')).map((l) => l.slice(2));
    const sections = bullets.map((b) => ({ slug: slug(b), title: b, points: [`${b}.`, `Seen from: ${ctx.input.topic}.`] }));
    return { title: ctx.input.topic, sections };
  },

  drafter(ctx) {
    const { title, points, position } = ctx.input;
    const text = `## ${position + 1}. ${title}\n\n${points.map((p) => `${p} `).join('')}\n`;
    writeFileSync(join(ctx.input._workflowFsRoot, 'draft'), text);
    return { text, words: text.split(/\s+/).filter(Boolean).length };
  },

  editor(ctx) {
    const { title, texts, words } = ctx.input;
    const total = words.reduce((a, b) => a + b, 0);
    writeFileSync(join(ctx.input._workflowFsRoot, 'paper'), `# ${title}\n\n${texts.join('\n')}\n_${texts.length} sections, ${total} words._\n`);
    return { sections: texts.length, words: total };
  },
};
