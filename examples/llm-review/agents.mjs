// The function agent of the llm-review example: it only ever sees typed, validated data.
export default {
  reporter: async (ctx) => {
    const { summary, findings, decision, blocking } = ctx.input;
    const lines = findings.map((f) => `- line ${f.line} [${f.severity}] ${f.message}`);
    return {
      report: [`Review: ${summary}`, ...lines, `Decision: ${decision} (${blocking} blocking)`].join('\n'),
    };
  },
};
