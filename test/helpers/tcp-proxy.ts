/**
 * A loopback TCP proxy between Baton and PostgreSQL (or any TCP peer), so a test can make the network
 * fail on purpose: `cut(ms)` destroys every live connection and refuses new ones for `ms` (they are
 * accepted and closed at once, as a reset would look to a client); `pause()` stops forwarding bytes
 * in both directions without closing anything (a stalled network), `resume()` lets them flow again;
 * `blackhole()` kills the live connections silently for good (a partition) while new ones work.
 * Listens on 127.0.0.1 only.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** `postgres://user@127.0.0.1:PORT/db` for a URL that named the target. */
  rewrite(url: string): string;
  /** Destroys live connections and refuses new ones for `ms`; resolves when connections are allowed again. */
  cut(ms: number): Promise<void>;
  /** Ends a cut under way now (its promise resolves). */
  heal(): void;
  /** Until `resume()`: bytes are held (sockets paused), connections stay open. */
  pause(): void;
  /**
   * Until `releaseReplies()`: bytes from the target to the client are held (requests still go through),
   * on live and new connections: an answer is delayed, so a `cut` can then lose it after the target acted.
   */
  holdReplies(): void;
  releaseReplies(): void;
  /**
   * Every live connection goes dead for good, as across a partition or a NAT that forgot it: bytes either
   * way are dropped, nothing is closed, and a close on one side is not passed on. New connections work.
   */
  blackhole(): void;
  resume(): void;
  /** Connections accepted since the start, live now, and refused while cut. */
  stats(): { accepted: number; live: number; refused: number; cuts: number };
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const dead = new Set<Socket>();
  let cutUntil = 0;
  let paused = false;
  let repliesHeld = false;
  let accepted = 0;
  let refused = 0;
  let cuts = 0;
  const timers = new Map<NodeJS.Timeout, () => void>();

  const server: Server = createServer((client) => {
    if (Date.now() < cutUntil) {
      refused++;
      client.resetAndDestroy();
      return;
    }
    accepted++;
    const upstream = connect({ host: target.host, port: target.port });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    if (paused) {
      client.pause();
      upstream.pause();
    }
    if (repliesHeld) upstream.pause();
    // pipe() would resume a paused source on its own: forward by hand so pause() holds
    const forward = (from: Socket, to: Socket): void => {
      from.on('data', (chunk: Buffer) => {
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => {
            if (!paused && !(repliesHeld && from === upstream)) from.resume();
          });
        }
      });
      from.on('end', () => to.end());
    };
    forward(client, upstream);
    forward(upstream, client);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  const port = address.port;

  function heal(): void {
    for (const [t, resolve] of timers) {
      clearTimeout(t);
      resolve();
    }
    timers.clear();
    cutUntil = 0;
  }

  return {
    port,
    rewrite: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    cut: (ms) => {
      cuts++;
      cutUntil = Date.now() + ms;
      for (const [a, b] of pairs) {
        a.resetAndDestroy();
        b.destroy();
      }
      pairs.clear();
      return new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          timers.delete(t);
          resolve();
        }, ms);
        timers.set(t, resolve);
      });
    },
    pause: () => {
      paused = true;
      for (const [a, b] of pairs) {
        a.pause();
        b.pause();
      }
    },
    resume: () => {
      paused = false;
      for (const [a, b] of pairs) {
        a.resume();
        if (!repliesHeld) b.resume();
      }
    },
    holdReplies: () => {
      repliesHeld = true;
      for (const [, b] of pairs) b.pause();
    },
    releaseReplies: () => {
      repliesHeld = false;
      if (!paused) for (const [, b] of pairs) b.resume();
    },
    blackhole: () => {
      for (const pair of pairs) {
        for (const sock of pair) {
          // a FIN from the client is not answered either (a socket that may not half-close ends its side when
          // the other's end is read): its goodbye waits for ever, as across a partition
          sock.allowHalfOpen = true;
          sock.removeAllListeners('data');
          sock.removeAllListeners('end');
          sock.removeAllListeners('close');
          sock.removeAllListeners('error');
          sock.on('data', () => undefined);
          sock.on('error', () => undefined);
          sock.resume();
          dead.add(sock);
        }
      }
      pairs.clear();
    },
    stats: () => ({ accepted, live: pairs.size, refused, cuts }),
    heal,
    close: async () => {
      // a cut still under way ends now: whoever awaits it is not left hanging
      heal();
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
      for (const sock of dead) sock.destroy();
      dead.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
