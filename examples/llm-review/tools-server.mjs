// A tiny MCP server (stdio) for the llm-review example: read_file and list_files under one folder.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const root = resolve(process.argv[2] ?? '.');
const inside = (p) => {
  const abs = resolve(root, String(p));
  if (relative(root, abs).startsWith('..')) throw new Error(`${p} is outside ${root}`);
  return abs;
};

const server = new Server({ name: 'llm-review-repo', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'read_file',
      description: 'Read a source file; lines are numbered',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
    { name: 'list_files', description: 'List the source files', inputSchema: { type: 'object', properties: {} } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const { name, arguments: args = {} } = req.params;
  try {
    if (name === 'read_file') {
      const text = readFileSync(inside(args.path), 'utf8');
      return { content: [{ type: 'text', text: text.split('\n').map((l, i) => `${i + 1}: ${l}`).join('\n') }] };
    }
    if (name === 'list_files') return { content: [{ type: 'text', text: readdirSync(root).join('\n') }] };
    return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
  } catch (e) {
    return { content: [{ type: 'text', text: String(e.message ?? e) }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
