// the in-process agent of the example; `summarize` is remote (agent.py)
export default { counter: () => ({ n: 42 }) };
