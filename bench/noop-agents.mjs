// No-op agents for the benchmarks' `baton worker` and `baton run` processes: agent-0 ... agent-9 (the
// agents of bench/gen.ts's workflows) return a valid output at once.
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
export default agents;
