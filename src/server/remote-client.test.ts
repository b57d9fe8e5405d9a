import { describe, expect, test } from 'vitest';
import { createRemoteAgent, type RemoteAgentOptions } from './remote-client.js';

const good: RemoteAgentOptions = { url: 'http://127.0.0.1:1', agent: 'summarize', handler: () => ({}), onError: () => undefined };

describe('createRemoteAgent options', () => {
  test.each([
    [{ url: 'build-box:8080' }],
    [{ url: 'not a url' }],
    [{ url: 'ftp://build-box/' }],
    [{ agent: '' }],
    [{ concurrency: 0 }],
    [{ concurrency: -1 }],
    [{ concurrency: 1.5 }],
    [{ concurrency: Number.NaN }],
    [{ waitS: -1 }],
    // the server's longest poll is 60 s: every claim of such an agent was refused (400), forever
    [{ waitS: 61 }],
    [{ waitS: Number.POSITIVE_INFINITY }],
    [{ handler: 'summarize' as unknown as RemoteAgentOptions['handler'] }],
  ] as Partial<RemoteAgentOptions>[][])('%j is refused at once (usage), before any request', (bad) => {
    // an ftp:// URL used to make an agent whose stop() rejected with undici's error; concurrency 0 one that never claimed
    expect(() => createRemoteAgent({ ...good, ...bad })).toThrow(expect.objectContaining({ code: 'usage', message: expect.stringMatching(/^createRemoteAgent: /) as string }) as Error);
  });

  test('good options make an agent that stops cleanly, a server or not', async () => {
    for (const extra of [{}, { concurrency: 3, waitS: 0 }, { waitS: 60 }, { url: 'https://127.0.0.1:1/prefix/' }]) {
      const agent = createRemoteAgent({ ...good, ...extra });
      await expect(agent.stop(0)).resolves.toBeUndefined();
      expect(agent.completed).toBe(0);
    }
  });
});
