/** The CLI from source, for tests that need a real process (kill -9, a second terminal): `node --import tsx test/helpers/baton-cli.ts ARGS`. */
import { exitWhenDone, main } from '../../src/cli/main.js';

exitWhenDone(await main(process.argv.slice(2)));
