#!/usr/bin/env node
import module from 'node:module';
// Node 22.1+ keeps the compiled code of Baton's modules on disk (in the temporary directory; set
// NODE_DISABLE_COMPILE_CACHE=1 to turn it off): later commands start faster. Older Node: nothing.
module.enableCompileCache?.();
const { main, exitWhenDone } = await import('../dist/cli/main.js');
exitWhenDone(await main(process.argv.slice(2)));
