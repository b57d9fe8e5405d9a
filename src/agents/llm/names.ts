/** Tool references (`mcp:server/tool`) and the names models see (`server__tool`: providers allow [A-Za-z0-9_-]{1,64}). */

export interface ToolRef {
  server: string;
  tool: string;
}

/** Parses `mcp:server/tool`; undefined when the reference is not in that form. */
export function parseToolRef(ref: string): ToolRef | undefined {
  const m = /^mcp:([^/\s]+)\/([^\s]+)$/.exec(ref);
  return m ? { server: m[1]!, tool: m[2]! } : undefined;
}

/** The function name offered to the model for a tool reference (a non-`mcp:` name is kept, cleaned). */
export function modelToolName(ref: string): string {
  const r = parseToolRef(ref);
  const raw = r ? `${r.server}__${r.tool}` : ref;
  return raw.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}
