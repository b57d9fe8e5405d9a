// Agents of the release-notes example: plain files under the scratch root Baton stages for each attempt.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export default {
  collector(ctx) {
    const root = ctx.input._workflowFsRoot;
    const lines = readFileSync(join(root, 'changes'), 'utf8').split('\n');
    const items = lines.filter((l) => /^- (fix|feat|perf):/.test(l)).map((l) => l.slice(2));
    writeFileSync(join(root, 'items'), items.join('\n') + '\n');
    return { count: items.length };
  },
  writer(ctx) {
    const root = ctx.input._workflowFsRoot;
    const style = readFileSync(join(root, 'style'), 'utf8').trim();
    const items = readFileSync(join(root, 'items'), 'utf8').trim().split('\n');
    const title = `Release ${ctx.input.version}: ${ctx.input.count} changes`;
    writeFileSync(join(root, 'notes'), `# ${title}\n\n_${style}_\n\n${items.map((i) => `- ${i}`).join('\n')}\n`);
    return { title };
  },
};
