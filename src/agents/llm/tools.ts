/** The tool port of LLM agents: what the loop offers the model and how a call is run (MCP implements it). */
import type { JsonObject } from '../../core/json.js';

export interface OfferedTool {
  /** The name the model sees (`server__tool`). */
  name: string;
  /** The reference as declared: `mcp:server/tool`. */
  ref: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export interface ToolResult {
  /** The result as text for the model (MCP text content joined; other content as JSON). */
  text: string;
  isError: boolean;
}

export interface ToolHost {
  /**
   * The tools an agent may be offered, from its declared references: only those that are declared
   * AND allowed by their server AND listed by it. Starting a server that fails rejects with an
   * AgentError (`mcp_server_failed`).
   */
  offer(refs: readonly string[], signal: AbortSignal): Promise<{ tools: OfferedTool[]; skipped: { ref: string; reason: string }[] }>;
  call(tool: OfferedTool, args: JsonObject, signal: AbortSignal): Promise<ToolResult>;
  close(): Promise<void>;
}

/**
 * A tool's input schema as providers accept it for a function's parameters. MCP servers (and their
 * SDKs) describe a tool without parameters as `{type: object}`, or `{}`: valid JSON Schema, but
 * OpenAI refuses the whole request ("object schema missing properties", HTTP 400) and Anthropic
 * needs `type: object`. The root gets both; nothing else changes, so what the tool accepts is the same.
 */
export function toolParameters(schema: Record<string, unknown>): Record<string, unknown> {
  const type = schema['type'];
  const objectOk = type === undefined || type === 'object' || (Array.isArray(type) && type.includes('object'));
  if (!objectOk) return schema;
  const props = schema['properties'];
  return { ...schema, type: 'object', properties: props !== null && typeof props === 'object' && !Array.isArray(props) ? props : {} };
}
