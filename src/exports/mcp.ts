/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/mcp`: MCP tools over stdio or streamable HTTP for LLM agents. Needs the optional peer dependency
 * `@modelcontextprotocol/sdk` (`npm install @modelcontextprotocol/sdk`), imported when the first
 * server starts.
 */

/** Starts the MCP servers a workflow declares on first use and offers only the allowed tools. */
export { McpHost, type McpHostOptions } from '../agents/llm/mcp.js';
export type { OfferedTool, ToolResult } from '../agents/llm/tools.js';
