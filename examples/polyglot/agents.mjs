// In-process agents: plain functions of ctx; ctx.input holds exactly the declared inputs.
export default {
  reporter: (ctx) => {
    const { counts, short, long } = ctx.input;
    const total = counts.reduce((n, c) => n + c.words, 0);
    const lines = counts.map((c, i) => `${c.doc}: ${c.words} words (longest "${c.longest}"), short ${short[i]}, long ${long[i]}`);
    return { summary: lines.join('\n'), total_words: total };
  },
};
