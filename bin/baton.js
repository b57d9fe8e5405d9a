#!/usr/bin/env node
import module from 'node:module';
// Baton loads ES-module dependencies with require() (CEL conditions, a CommonJS user's `require`): Node's
// require(esm), on by default from 20.19 and 22.12. Without it a `skip_when` would be reported as a wrong
// expression, so such a Node (21, 22.0-22.11, or --no-experimental-require-module) is refused in one line.
if (process.features.require_module !== true) {
  process.stderr.write(`baton: Node.js ${process.version} cannot require() ES modules, which Baton needs: use Node ^20.19 or >= 22.12${process.features.require_module === false && !/^v(21|22\.(\d|1[01])\.)/.test(process.version) ? ' without --no-experimental-require-module' : ''}\n`);
  process.exit(2);
}
// Node 22.1+ keeps the compiled code of Baton's modules on disk (in the temporary directory; set
// NODE_DISABLE_COMPILE_CACHE=1 to turn it off): later commands start faster. Older Node: nothing.
module.enableCompileCache?.();
const { main, exitWhenDone } = await import('../dist/cli/main.js');
exitWhenDone(await main(process.argv.slice(2)));
