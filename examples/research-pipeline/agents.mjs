// Agents for the research pipeline example: deterministic stand-ins for real research, so the example
// runs anywhere without network access.

const CORPUS = [
  { source: 'rfc-0024', content: 'The executor, not the agent, owns the wiring between phases.', confidence: 0.95 },
  { source: 'workflow-yaml-1.0', content: 'Outputs are validated at completion; inputs are resolved at claim time.', confidence: 0.9 },
  { source: 'field-notes', content: 'Agents that read raw intent state break when upstream keys are renamed.', confidence: 0.7 },
];

export default {
  researcher: async (ctx) => {
    const topic = ctx.input.topic;
    const findings = CORPUS.map((f) => ({ ...f, content: `${f.content} (re: ${topic})` }));
    const words = findings.reduce((n, f) => n + f.content.split(/\s+/).length, 0);
    return { sources: findings.map((f) => f.source), findings, summary: { title: `Notes on ${topic}`, words } };
  },

  reviewer: async (ctx) => ({ approved: ctx.input.findings.every((f) => f.content.length > 0) }),

  analyst: async (ctx) => {
    const strong = ctx.input.research_findings.filter((f) => f.confidence >= 0.8);
    return {
      insights: `${ctx.input.headline}: ${strong.length} of ${ctx.input.research_findings.length} findings are strong (sources: ${ctx.input.source_list.join(', ')}).`,
      recommendations: strong.map((f) => `Build on ${f.source}`),
    };
  },

  writer: async (ctx) => ({
    report_url: `file://reports/research-${ctx.runId}.md`,
    report_summary: `${ctx.input.insights}\n${ctx.input.recommendations.map((r) => `- ${r}`).join('\n')}`,
  }),
};
