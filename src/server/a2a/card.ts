/**
 * The A2A agent card of `baton serve --a2a` and what mounting the A2A routes takes. Kept apart from
 * routes.ts, which imports `hono` (an optional peer), so that `@baton-run/baton/a2a` imports without it.
 * Its declarations name `@a2a-js/sdk`'s types: giving them is what that subpath is for.
 */
import type { AgentCard } from '@a2a-js/sdk';
import type { Engine } from '../../api/engine.js';
import { JSON_MODE } from '../../agents/a2a-sdk.js';
import type { ChangeHub } from '../../api/changes.js';
import type { EdgeOptions } from '../http-types.js';
import type { RegisteredWorkflow } from '../workflows.js';
import { A2A_PATH, type A2aServerModules } from './modules.js';

/** The SDK's modules an A2A server needs, loaded once (`loadA2aServer`, modules.ts, gives them opaque). */
export interface A2aSdkModules {
  sdk: typeof import('@a2a-js/sdk');
  server: typeof import('@a2a-js/sdk/server');
  errors: typeof import('@a2a-js/sdk/errors');
  /** A2A v0.3 at the same endpoint: its JSON-RPC handler, over the same request handler. */
  legacy: typeof import('@a2a-js/sdk/compat/v0_3/server');
  compat: typeof import('@a2a-js/sdk/compat/v0_3');
}

/** The SDK's modules behind the opaque value `loadA2aServer()` returned. */
export function sdkModules(m: A2aServerModules): A2aSdkModules {
  return m as unknown as A2aSdkModules;
}

export interface A2aMountOptions {
  modules: A2aSdkModules;
  engine: Engine;
  workflows: ReadonlyMap<string, RegisteredWorkflow>;
  hub: ChangeHub;
  closing: AbortSignal;
  edge: EdgeOptions;
  /** The card's name (default `baton`) and version. */
  name?: string;
  version?: string;
}

/** The agent card: one skill per registered workflow; its interface URL is under `origin`. */
export function agentCard(o: Pick<A2aMountOptions, 'workflows' | 'edge' | 'name' | 'version'>, origin: string): AgentCard {
  const keyed = o.edge.keys.length > 0;
  return {
    name: o.name ?? 'baton',
    description: `Baton workflows served over A2A: each skill runs one workflow (its id is the workflow's name); send the trigger as a data part and name the skill in the message's metadata (\`skill\`).`,
    // one endpoint for both versions (routes.ts tells them apart by their method names): v1.0 first, the one v1.0 clients pick
    supportedInterfaces: [
      { url: `${origin}${A2A_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${origin}${A2A_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    version: o.version ?? '0.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: keyed ? { bearer: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'a Baton API key (docs/server.md#keys)', scheme: 'Bearer', bearerFormat: '' } } } } : {},
    securityRequirements: keyed ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: [JSON_MODE, 'text/plain'],
    defaultOutputModes: [JSON_MODE],
    skills: [...o.workflows.keys()].map((name) => ({
      id: name,
      name,
      description: `runs the Baton workflow \`${name}\`: the data part is its trigger; the outputs of its last phases come back as a data-part artifact`,
      tags: ['baton', 'workflow'],
      examples: [],
      inputModes: [JSON_MODE],
      outputModes: [JSON_MODE],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

/** v0.3's name of the card's version. */
const V03 = '0.3.0';

/**
 * The card as an A2A v0.3 client reads it: v0.3's top-level `url`, `preferredTransport` and
 * `protocolVersion`, and its security schemes (`{type: "http", scheme: "bearer"}`) and `security`.
 * `full`: the v1.0 card's JSON is kept beside them (what a client that sends no `A2A-Version`
 * header gets: v0.3 clients send none, v1.0 clients send `1.0`; a v1.0 reader sees
 * `supportedInterfaces` and takes it as v1.0, a v0.3 reader takes the fields it knows).
 * Otherwise (`A2A-Version: 0.3`) it is v0.3's card alone, as the SDK's own compatibility layer gives it.
 */
export function legacyCard(v1: Record<string, unknown>, card: AgentCard, full: boolean): Record<string, unknown> {
  const iface = card.supportedInterfaces[0]!;
  const keyed = Object.keys(card.securitySchemes).length > 0;
  const v03: Record<string, unknown> = {
    name: card.name,
    description: card.description,
    url: iface.url,
    preferredTransport: 'JSONRPC',
    protocolVersion: V03,
    version: card.version,
    capabilities: { streaming: card.capabilities?.streaming ?? false, pushNotifications: false },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((k) => ({ id: k.id, name: k.name, description: k.description, tags: k.tags, examples: k.examples, inputModes: k.inputModes, outputModes: k.outputModes })),
    ...(keyed ? { security: [{ bearer: [] }] } : {}),
  };
  if (!full) return { ...v03, ...(keyed ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a Baton API key (docs/server.md#keys)' } } } : {}), supportedInterfaces: v1['supportedInterfaces'] };
  // the v1.0 card's own fields win where both versions name one (capabilities, skills); the bearer scheme
  // carries both shapes (a v1.0 reader takes its `httpAuthSecurityScheme`, a v0.3 one its `type` and `scheme`)
  const schemes = v1['securitySchemes'] as Record<string, Record<string, unknown>> | undefined;
  return { ...v03, ...v1, ...(keyed && schemes?.['bearer'] ? { securitySchemes: { ...schemes, bearer: { ...schemes['bearer'], type: 'http', scheme: 'bearer' } } } : {}) };
}
