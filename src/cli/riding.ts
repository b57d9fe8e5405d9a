/**
 * Requests of the CLI's `--server` forms (approve, deny, respond, cancel, run) that ride out a server
 * restart or a cut instead of failing on the first refused connection.
 */
import { safeText } from '../diagnostics/terminal.js';
import { ServerAnswerError, transportFailure } from '../server/client.js';
import { START_BLIP_MS, START_REFUSED_MS } from './durable.js';
import type { CliIo } from './io.js';

/**
 * A request to the server, riding out a restart or a cut as the local commands ride out a database
 * blip: a connection refused is tried again for START_REFUSED_MS (nothing listens there: a restart, or a
 * mistyped port; a name that does not resolve too); a reset, a timeout or a 502/503/504 (the server's
 * own store away, a proxy before a restarting server) for START_BLIP_MS; with one line on stderr. A
 * failure sending again cannot mend (a port fetch refuses, a certificate) fails at once. After a try
 * whose answer may have been lost (a reset, a 503), a refusal is first shown to `landed`: the decision
 * this command made is its success, not "already approved".
 */
export async function riding<R>(io: CliIo, send: () => Promise<R>, landed?: (refusal: ServerAnswerError) => Promise<R | undefined>): Promise<R> {
  const start = performance.now();
  let said = false;
  let inDoubt = false;
  for (let n = 1; ; n++) {
    try {
      return await send();
    } catch (e) {
      if (inDoubt && landed && e instanceof ServerAnswerError && e.status === 409) {
        const mine = await landed(e).catch(() => undefined);
        if (mine !== undefined) return mine;
      }
      const how = transportFailure(e);
      const refused = how === 'refused';
      // 503: the server's own store is away; 502 and 504: a proxy in front of a server that is restarting
      const away = how === 'refused' || how === 'lost' || (e instanceof ServerAnswerError && (e.status === 502 || e.status === 503 || e.status === 504));
      const bound = !away ? 0 : refused ? START_REFUSED_MS : START_BLIP_MS;
      if (performance.now() - start >= bound) throw e;
      if (!refused) inDoubt = true;
      if (!said) io.stderr(`server unavailable, retrying for up to ${bound / 1000} s: ${safeText((e as Error).message, 300)}\n`);
      said = true;
      await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** Math.min(5, n - 1))));
    }
  }
}
