/**
 * An A2A agent built from `@a2a-js/sdk`'s own server pieces (DefaultRequestHandler, InMemoryTaskStore,
 * JsonRpcTransportHandler) on a loopback port, with a minimal node:http adapter in place of the SDK's
 * express glue: the agent card at /.well-known/agent-card.json and JSON-RPC (SSE for streams) at /a2a.
 *
 * Its executor acts on the data part it is sent: `{question}` is answered with `{answer}`;
 * `{mode: 'wrong'}` answers with an output of the wrong shape; `{mode: 'ask'}` asks for input
 * (`input-required`, or `auth-required` with `{mode: 'auth'}`) and answers with what it is told
 * (`{mode: 'ask-wrong'}`: in an output of the wrong shape);
 * `{mode: 'hang'}` works until it is cancelled; `{mode: 'text'}` answers with a text part only.
 *
 * `legacy: true` makes it an agent of A2A v0.3, as most agents others deployed before v1.0 are: its card
 * has v0.3's shape (`url`, `protocolVersion: "0.3.0"`, `preferredTransport`, kind-tagged security
 * schemes) and its endpoint speaks v0.3 JSON-RPC only (`message/send`, `tasks/get`, ..., kind-tagged
 * parts), through the SDK's own `LegacyJsonRpcTransportHandler` over the same request handler.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type AgentCard, type Message, type Part, type Task } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, JsonRpcTransportHandler, ServerCallContext, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';

export interface A2aPeer {
  url: string;
  card: AgentCard;
  /** Task ids the peer was asked to cancel. */
  cancelled: string[];
  /** Every message the peer received (in order). */
  received: Message[];
  /** Requests refused for want of the token (`token`). */
  readonly refused: number;
  /** Resolves when a `hang` task has started (its id). */
  hanging: Promise<string>;
  close(): Promise<void>;
}

export interface PeerOptions {
  streaming?: boolean;
  skills?: { id: string; inputModes?: string[]; outputModes?: string[] }[];
  defaultInputModes?: string[];
  defaultOutputModes?: string[];
  /** The RPC endpoint answers 401 to a request without `Authorization: Bearer <token>` (the card stays public). */
  token?: string;
  /** An agent of A2A v0.3: a v0.3 card, v0.3 JSON-RPC only. */
  legacy?: boolean;
  /** The JSON-RPC methods the peer was called with (in order). */
  methods?: string[];
  /** The `traceparent` header of each JSON-RPC request (undefined: none was sent), in order. */
  traceparents?: (string | undefined)[];
}

const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const agentMessage = (parts: Part[], taskId: string, contextId: string): Message => ({ messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] });

function dataIn(m: Message): Record<string, unknown> | undefined {
  for (const p of m.parts) if (p.content?.$case === 'data' && typeof p.content.value === 'object' && p.content.value !== null) return p.content.value as Record<string, unknown>;
  return undefined;
}

export async function startA2aPeer(opts: PeerOptions = {}): Promise<A2aPeer> {
  const cancelled: string[] = [];
  const received: Message[] = [];
  const waiting = new Map<string, () => void>();
  let hangStarted: (id: string) => void = () => undefined;
  const hanging = new Promise<string>((r) => (hangStarted = r));

  const status = (bus: ExecutionEventBus, taskId: string, contextId: string, state: TaskState, parts: Part[] = []): void => {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state, message: parts.length > 0 ? agentMessage(parts, taskId, contextId) : undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
  };

  const executor: AgentExecutor = {
    async execute(rc: RequestContext, bus: ExecutionEventBus) {
      const msg = rc.userMessage;
      received.push(msg);
      const { taskId, contextId } = rc;
      const task: Task = rc.task ?? { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined }, artifacts: [], history: [msg], metadata: undefined };
      bus.publish(AgentEvent.task(task));
      const first = rc.task ? dataIn(rc.task.history[0] ?? msg) : dataIn(msg);
      const mode = first?.['mode'];
      status(bus, taskId, contextId, TaskState.TASK_STATE_WORKING);
      const done = (parts: Part[]): void => {
        bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: randomUUID(), name: 'result', description: '', parts, metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
        status(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
        bus.finished();
      };
      if (mode === 'ask' || mode === 'auth' || mode === 'ask-wrong') {
        if (!rc.task) {
          status(bus, taskId, contextId, mode === 'auth' ? TaskState.TASK_STATE_AUTH_REQUIRED : TaskState.TASK_STATE_INPUT_REQUIRED, [text('which colour?')]);
          return;
        }
        const said = dataIn(msg) ?? { text: msg.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('') };
        if (mode === 'ask-wrong') return done([data({ wrong: said['text'] ?? said })]);
        done([data({ answer: `told ${JSON.stringify(said['text'] ?? said)}` })]);
        return;
      }
      if (mode === 'hang') {
        hangStarted(taskId);
        await new Promise<void>((r) => waiting.set(taskId, r));
        return;
      }
      if (mode === 'wrong') return done([data({ wrong: 1 })]);
      if (mode === 'text') return done([text('from text')]);
      done([data({ answer: `${String(first?.['question'] ?? '')}!` })]);
    },
    cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
      cancelled.push(taskId);
      const task = received.find((m) => m.taskId === taskId);
      status(bus, taskId, task?.contextId ?? '', TaskState.TASK_STATE_CANCELED);
      bus.finished();
      waiting.get(taskId)?.();
      return Promise.resolve();
    },
  };

  let url = '';
  let refused = 0;
  const card = (): AgentCard => ({
    name: 'peer',
    description: 'a test A2A agent built from @a2a-js/sdk',
    supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: opts.streaming ?? true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: opts.defaultInputModes ?? ['application/json', 'text/plain'],
    defaultOutputModes: opts.defaultOutputModes ?? ['application/json'],
    skills: (opts.skills ?? [{ id: 'answer' }]).map((s) => ({ id: s.id, name: s.id, description: s.id, tags: [], examples: [], inputModes: s.inputModes ?? [], outputModes: s.outputModes ?? [], securityRequirements: [] })),
    signatures: [],
  });
  // what a v0.3 agent serves at /.well-known/agent-card.json (A2A v0.3 AgentCard)
  const legacyCard = (): Record<string, unknown> => ({
    name: 'peer',
    description: 'a test A2A v0.3 agent',
    url: `${url}/a2a`,
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    capabilities: { streaming: opts.streaming ?? true, pushNotifications: false },
    ...(opts.token !== undefined ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, security: [{ bearer: [] }] } : {}),
    defaultInputModes: opts.defaultInputModes ?? ['application/json', 'text/plain'],
    defaultOutputModes: opts.defaultOutputModes ?? ['application/json'],
    skills: (opts.skills ?? [{ id: 'answer' }]).map((s) => ({ id: s.id, name: s.id, description: s.id, tags: [], ...(s.inputModes ? { inputModes: s.inputModes } : {}), ...(s.outputModes ? { outputModes: s.outputModes } : {}) })),
  });
  const handler = new DefaultRequestHandler(opts.legacy ? { ...card(), supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' }] } : card(), new InMemoryTaskStore(), executor);
  const rpc = opts.legacy ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler);

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(opts.legacy ? legacyCard() : card()));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/a2a') {
        res.writeHead(404).end();
        return;
      }
      if (opts.token !== undefined && req.headers.authorization !== `Bearer ${opts.token}`) {
        refused++;
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"unauthorized"}');
        return;
      }
      const body = await readBody(req);
      opts.traceparents?.push(typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined);
      try {
        const method = (JSON.parse(body) as { method?: unknown }).method;
        if (typeof method === 'string') opts.methods?.push(method);
      } catch {
        // the handler answers a body that is no JSON
      }
      const out = await rpc.handle(body, new ServerCallContext({ requestedVersion: opts.legacy ? '0.3' : '1.0' }));
      if (Symbol.asyncIterator in out) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for await (const ev of out) res.write(`data: ${JSON.stringify(ev)}\n\n`);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    })().catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    card: card(),
    cancelled,
    received,
    hanging,
    get refused() {
      return refused;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const w of waiting.values()) w();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
