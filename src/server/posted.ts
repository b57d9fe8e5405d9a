/**
 * What a posted workflow text may reach on the server's host. `x-command` agents and MCP servers
 * (`mcp.servers`) run commands or call URLs; `x-a2a` agents call URLs from the server's network (with a token
 * from its environment); an LLM block's `x-base_url` sends the server's provider key (OPENAI_API_KEY,
 * ANTHROPIC_API_KEY, ...) to the URL it names; `x-contract: FILE`, `x-blueprint: FILE` and
 * `x-replies: FILE` read files (and their diagnostics would tell what is there); AIP-16 `inputsFiles` and
 * `outputsFiles` read and write files in the workspace of the server's runs (its folder, which may hold its
 * agents module, its keys, its store), when the workflow runs. Found in the YAML before anything is
 * compiled, so a refused text has read nothing. A workflow registered with `--workflows DIR` was put there
 * by whoever runs the server, and may do all of this.
 */
import { parseYamlValue } from '../workflow/source.js';

/**
 * The places in `text` that reach the host, as `path (what)` lines, and among them (`files`) those that
 * reach it only when the workflow runs (declared files: validating such a text touches nothing); empty
 * when there are none (or the YAML does not parse: the compiler reports it and reads nothing).
 */
export function hostReach(text: string): { all: string[]; whenRun: string[] } {
  let doc: unknown;
  try {
    // the compiler's own parser and schema (js-yaml, YAML 1.2 core, its nesting bound): what is checked
    // here is what would be compiled, with no second parser's reading to slip between
    doc = parseYamlValue(text);
  } catch {
    return { all: [], whenRun: [] };
  }
  const out: string[] = [];
  const whenRun: string[] = [];
  // aliases share nodes (and may point at an ancestor): each node is walked once, so a few lines of
  // anchors cannot make the walk exponential, and the first path that reaches a node names it
  const seen = new WeakSet<object>();
  const walk = (v: unknown, path: string, depth: number): void => {
    if (depth > 256 || out.length >= 10 || v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`, depth + 1));
      return;
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const at = path === '' ? k : `${path}.${k}`;
      if (k === 'x-command') out.push(`${at} (runs a command)`);
      // the server would call any URL from its own network (and send a token from its environment)
      else if (k === 'x-a2a') out.push(`${at} (calls a URL from the server's network)`);
      else if ((k === 'x-contract' || k === 'x-blueprint' || k === 'x-replies') && typeof x === 'string') out.push(`${at} (reads a file)`);
      // an LLM provider's URL: the server would send its own provider key (OPENAI_API_KEY, ...) there
      else if (k === 'x-base_url') out.push(`${at} (sends the server's provider key to a URL)`);
      else if ((k === 'inputsFiles' || k === 'outputsFiles') && x !== null && typeof x === 'object' && Object.keys(x).length > 0) {
        const line = `${at} (${k === 'inputsFiles' ? 'reads' : 'writes'} files in the server's workspace)`;
        out.push(line);
        whenRun.push(line);
      } else if (k === 'mcp' && path === '' && x !== null && typeof x === 'object' && Object.keys((x as Record<string, unknown>)['servers'] ?? {}).length > 0) out.push(`${at}.servers (runs commands, or calls URLs from the server's network)`);
      else walk(x, at, depth + 1);
    }
  };
  walk(doc, '', 0);
  return { all: out, whenRun };
}
