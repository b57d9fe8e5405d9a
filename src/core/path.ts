/** A path into a document or value: object keys and array indices. */
export type Path = readonly (string | number)[];

const IDENT = /^[A-Za-z_$][\w$-]*$/;

/**
 * Dotted path for diagnostics: `workflow.analysis.inputs.findings`, list items as `depends_on[1]`.
 * Keys that are not identifier-like are quoted: `workflow["my phase"]`.
 */
export function dottedPath(path: Path): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (IDENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

/** RFC 6901 JSON Pointer: `/findings/0/confidence`. */
export function jsonPointer(path: Path): string {
  let out = '';
  for (const seg of path) out += '/' + String(seg).replace(/~/g, '~0').replace(/\//g, '~1');
  return out;
}
