/**
 * The seam for remote agents (issue 17: claim, heartbeat, complete, fail; createRemoteAgent; A2A).
 * They are built on the engine's new claim model, where a remote claim is the same claim a local
 * worker makes, with the same lease and fencing token; until then this server registers no agent
 * route. When they come, they are added to ROUTES (schemas.ts) with `action: 'admin'` and checked
 * per request with `mayActAsAgent` (keys.ts), and registered here, so `/openapi.json` documents them
 * and the edge (http.ts) validates them like every other route.
 */
import type { Hono } from 'hono';
import type { Engine } from '../api/engine.js';
import type { EdgeOptions } from './http.js';

export interface AgentRoutesHost {
  app: Hono;
  engine: Engine;
  edge: EdgeOptions;
}

/** Registers the remote-agent routes. None yet: see the comment above. */
export function registerAgentRoutes(host: AgentRoutesHost): void {
  void host;
}
