// Loaded by bench/run.mjs after tsx: every module of src/ a bench imports is served from dist/ (what users
// run, compiled by tsc) when dist/ has it. tsx's own transform wraps every function in a naming helper,
// which more than doubled the engine's per-phase cost in the in-process benches.
// BATON_BENCH_SRC=1 measures src/ through tsx instead.
import { register } from 'node:module';

if (process.env.BATON_BENCH_SRC !== '1') register('./dist-resolve.mjs', import.meta.url);
