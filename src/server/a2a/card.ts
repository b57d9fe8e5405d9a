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
    supportedInterfaces: [{ url: `${origin}${A2A_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
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

