/**
 * What a failed process's stderr says, in a line (an MCP server that did not start, a subprocess agent
 * that exited): the lines that name an error (`Error: Cannot find module ...`), not the last ones, which
 * for Node are the stack's closing brace and `Node.js v20`.
 */
export function stderrGist(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^at\s/.test(l) && !/^Node\.js v\d/.test(l) && !/^[\s{}()[\],;^~|]*$/.test(l) && !/^code: /.test(l) && !/^requireStack:/.test(l));
  // Python's `Traceback (most recent call last):` announces the error; its last line names it
  const telling = lines.filter((l) => /error|cannot|can't|not found|no such|denied|refused|failed|exception|ENOENT|EACCES/i.test(l));
  return (telling.length > 0 ? telling.slice(0, 2) : lines.slice(-3)).join(' | ').slice(0, 1000);
}
