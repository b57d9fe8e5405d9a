/**
 * Nesting depth of JSON text, found by scanning (no parse, no recursion). Outputs that arrive as text
 * (subprocess agents, HTTP) are checked before JSON.parse builds them, so that no later walk over
 * the value (validation, copies, serialisation) can overflow the stack.
 */

/** Deepest nesting of arrays and objects accepted in an agent's output. */
export const MAX_JSON_DEPTH = 1000;

/** The offset of the bracket that nests deeper than `limit`, or -1. Strings (and escapes in them) are skipped. */
export function jsonDepthExceeded(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > limit) return i;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return -1;
}
