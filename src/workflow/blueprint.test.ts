import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from './compile.js';

const fixtures = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'blueprints');

function compile(text: string, file = join(fixtures, 'workflow.yaml')): ReturnType<typeof parseWorkflow> {
  return parseWorkflow(text, { file });
}

const codes = (r: ReturnType<typeof parseWorkflow>): string[] => r.diagnostics.map((d) => `${d.severity} ${d.code}`);

describe('blueprints', () => {
  test('inline blueprint fields are kept on the agent, without unknown-key warnings', () => {
    const r = compile(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai, model: gpt-5.2}
agents:
  reviewer:
    description: Reviews
    system_prompt: Be strict.
    prompt: "Review {{input.code}}"
    max_output_retries: 0
    llm: {model: gpt-5-mini, temperature: 0}
    parameters_schema: {type: object, required: [code]}
    output_schema: {type: object, required: [summary], properties: {summary: {type: string}}}
workflow:
  review:
    assign: reviewer
    inputs: {code: $trigger.code}
    outputs: {summary: string}
`);
    expect(codes(r)).toEqual([]);
    const bp = r.model!.agents!['reviewer']!.blueprint!;
    expect(bp).toMatchObject({ systemPrompt: 'Be strict.', prompt: 'Review {{input.code}}', maxOutputRetries: 0, llm: { model: 'gpt-5-mini', temperature: 0 } });
    expect(bp.outputSchema).toEqual({ type: 'object', required: ['summary'], properties: { summary: { type: 'string' } } });
    expect(bp.parametersSchema).toEqual({ type: 'object', required: ['code'] });
  });

  test('an agent without blueprint fields has no blueprint', () => {
    const r = compile(`
openintent: "1.0"
info: {name: x}
agents:
  plain: {description: a function}
workflow:
  a: {assign: plain}
`);
    expect(r.model!.agents!['plain']!.blueprint).toBeUndefined();
  });

  test('x-blueprint reads a YAML file beside the workflow; its tools are checked', () => {
    const r = compile(`
openintent: "1.0"
info: {name: x}
mcp:
  servers:
    files: {command: node, args: [s.mjs], allowed_tools: [read_file]}
agents:
  reviewer:
    x-blueprint: reviewer.yaml
    max_output_retries: 3
workflow:
  review:
    assign: reviewer
    inputs: {code: $trigger.code}
    outputs: {summary: string, severity: string}
`);
    expect(codes(r)).toEqual([]);
    const a = r.model!.agents!['reviewer']!;
    expect(a.blueprint).toMatchObject({ file: 'reviewer.yaml', systemPrompt: 'You are a careful reviewer.', maxOutputRetries: 3, tools: ['mcp:files/read_file'] });
    expect(r.model!.mcp!.servers['files']).toEqual({ id: 'files', command: 'node', args: ['s.mjs'], env: {}, allowedTools: ['read_file'] });
  });

  test('x-blueprint problems point at the x-blueprint value', () => {
    const text = `
openintent: "1.0"
info: {name: x}
agents:
  a: {x-blueprint: bad.json}
  b: {x-blueprint: missing.yaml}
  c: {x-blueprint: reviewer.yaml}
workflow:
  p: {assign: a}
  q: {assign: b}
  r: {assign: c, outputs: {summary: string}}
`;
    const r = compile(text);
    expect(r.diagnostics.map((d) => [d.code, d.path.join('.')])).toEqual([
      ['invalid-schema', 'agents.a.x-blueprint'],
      ['file-unreadable', 'agents.b.x-blueprint'],
      ['mcp-unknown-server', 'agents.c.x-blueprint'],
      ['template-unknown-name', 'agents.c.x-blueprint'],
    ]);
  });

  test('an open schema that does not describe a required output is a warning', () => {
    const r = compile(`
openintent: "1.0"
info: {name: x}
agents:
  w: {output_schema: {type: object, properties: {a: {type: string}}}}
workflow:
  p: {assign: w, outputs: {a: string, b: integer}}
`);
    expect(codes(r)).toEqual(['warning output-schema-mismatch']);
    expect(r.ok).toBe(true);
  });

  test('outputs that fit: integer against number, enums, $ref, anyOf, optional outputs', () => {
    const r = compile(`
openintent: "1.0"
info: {name: x}
types:
  Level: {enum: [low, high]}
agents:
  w:
    output_schema:
      type: object
      additionalProperties: false
      $defs: {item: {type: object}}
      properties:
        n: {type: number}
        level: {enum: [low, high]}
        items: {type: array, items: {$ref: "#/$defs/item"}}
        maybe: {anyOf: [{type: string}, {type: "null"}]}
workflow:
  p:
    assign: w
    outputs:
      n: integer
      level: Level
      items: object[]
      maybe: string | null
      extra: {type: string, required: false}
`);
    expect(codes(r)).toEqual([]);
  });

  test('the corpus mcp workflow stays clean', () => {
    const r = compile(`
openintent: "1.0"
info: {name: x}
mcp:
  servers:
    filesystem:
      command: "npx"
      args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"]
      allowed_tools: ["read_file", "list_directory"]
      security: {audit: true}
    remote:
      command: "npx"
      env: {KEY: "\${OPENINTENT_API_KEY}"}
agents:
  researcher: {tools: [mcp:filesystem/read_file, mcp:filesystem/list_directory]}
  analyst: {tools: [mcp:remote/get_intent]}
workflow:
  gather: {assign: researcher}
  analyze: {assign: analyst, depends_on: [gather]}
`);
    expect(codes(r)).toEqual([]);
    expect(r.model!.agents!['researcher']!.tools).toEqual(['mcp:filesystem/read_file', 'mcp:filesystem/list_directory']);
    expect(r.model!.agents!['researcher']!.blueprint).toBeUndefined();
  });
});

test('an unknown llm provider is an invalid value, with a suggestion', () => {
  const r = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openia}
agents:
  w: {system_prompt: hi, llm: {provider: antropic}}
workflow:
  p: {assign: w}
`);
  expect(r.diagnostics.map((d) => [d.code, d.path.join('.'), d.hint])).toEqual([
    ['invalid-value', 'llm.provider', 'did you mean `openai`?'],
    ['invalid-value', 'agents.w.llm.provider', 'did you mean `anthropic`?'],
  ]);
});

test("Baton's own llm keys (x-request_timeout_ms, x-transport_retries, x-prices, ...) are checked where they are written, not silently replaced by defaults", () => {
  const r = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm:
  x-request_timeout_ms: -1
  x-transport_retries: lots
  x-structured_outputs: "yes"
  x-base_url: 42
  x-replies: ""
  x-prices: {my-model: {input: 3, output_per_mtok: 15}}
agents:
  w: {system_prompt: hi, llm: {x-request_timeout_ms: 3000000000, x-transport_retries: 11}}
workflow:
  p: {assign: w}
`);
  const found = r.diagnostics.map((d) => [d.severity, d.code, d.path.join('.')]);
  expect(found).toEqual(
    expect.arrayContaining([
      ['error', 'invalid-value', 'llm.x-request_timeout_ms'],
      ['error', 'wrong-type', 'llm.x-transport_retries'],
      ['error', 'wrong-type', 'llm.x-structured_outputs'],
      ['error', 'wrong-type', 'llm.x-base_url'],
      ['error', 'missing-field', 'llm.x-prices.my-model'],
      ['error', 'invalid-value', 'agents.w.llm.x-request_timeout_ms'],
      ['error', 'invalid-value', 'agents.w.llm.x-transport_retries'],
    ]),
  );
  expect(found.some(([, , p]) => p === 'llm.x-replies')).toBe(true);
  for (const d of r.diagnostics) expect(d.range).toBeDefined();
});

test('x-base_url must be an http(s) URL: a malformed one is an error where it is written, not three transport failures at run time', () => {
  const r = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai-compatible, model: m, x-base_url: "localhost:11434/v1"}
agents:
  w: {system_prompt: hi, llm: {x-base_url: "not a url"}}
  v: {system_prompt: hi, llm: {x-base_url: "ftp://models.example/v1"}}
workflow:
  p: {assign: w}
  q: {assign: v}
`);
  expect(r.diagnostics.map((d) => [d.severity, d.code, d.path.join('.')])).toEqual([
    ['error', 'invalid-value', 'llm.x-base_url'],
    ['error', 'invalid-value', 'agents.w.llm.x-base_url'],
    ['error', 'invalid-value', 'agents.v.llm.x-base_url'],
  ]);
  for (const d of r.diagnostics) expect(d.range).toBeDefined();
});

test('good values of those keys pass without a word', () => {
  const r = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai, x-request_timeout_ms: 5000, x-transport_retries: 0, x-structured_outputs: true, x-base_url: "http://127.0.0.1:1/v1", x-prices: {m: {input_per_mtok: 1, output_per_mtok: 2}}}
agents:
  w: {system_prompt: hi}
workflow:
  p: {assign: w}
`);
  expect(r.diagnostics).toEqual([]);
});

test('openai-compatible has no default model: an LLM agent that would run on it without one is warned of at validate time, not found at the first call (a warning: it may be bound to a handler)', () => {
  const r = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai-compatible}
agents:
  a: {system_prompt: hi}
  b: {system_prompt: hi, llm: {model: llama3.1}}
  c: {system_prompt: hi, llm: {provider: openai-compatible}}
  d: {system_prompt: hi, llm: {provider: openai}}
workflow:
  p: {assign: a}
  q: {assign: b}
  s: {assign: c}
  t: {assign: d}
`);
  expect(r.diagnostics.map((d) => [d.severity, d.code, d.path.join('.')])).toEqual([
    ['warning', 'missing-field', 'agents.a'],
    ['warning', 'missing-field', 'agents.c.llm'],
  ]);
  const bare = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai-compatible}
workflow:
  p: {assign: a}
`);
  expect(bare.diagnostics.map((d) => [d.severity, d.code, d.path.join('.')])).toEqual([['warning', 'missing-field', 'llm']]);
  // an agent that moves to openai-compatible does not take the workflow's OpenAI model with it
  const moved = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai, model: gpt-4o}
agents:
  a: {system_prompt: hi, llm: {provider: openai-compatible, x-base_url: "http://127.0.0.1:11434/v1"}}
workflow:
  p: {assign: a}
`);
  expect(moved.diagnostics.map((d) => [d.severity, d.code, d.path.join('.')])).toEqual([['warning', 'missing-field', 'agents.a.llm']]);
});
