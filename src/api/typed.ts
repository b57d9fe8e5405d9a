/**
 * Workflow types for the library API. `baton types wf.yaml -o wf.types.ts` writes an interface
 * `Workflow` (`{ trigger; handlers }`) for one workflow; `createEngine<Workflow>(...)` then checks at
 * compile time that every agent id in `agents` exists in the workflow and that each handler returns
 * its phases' output, and `start(spec, { trigger })` checks the trigger. Without it (the default,
 * `AnyWorkflow`) any ids and handlers are accepted and checked when the run starts.
 */
import type { Json } from '../core/json.js';
import type { AgentContext, ClosableAgent } from '../engine/agent.js';

/** What a generated `Workflow` interface holds. */
export interface WorkflowTypes {
  /** The trigger's type (`x-trigger`, or the keys `$trigger.*` inputs read). */
  trigger: unknown;
  /** Per agent id, the handler type: the context of its phases in, their output out. */
  handlers: object;
}

/**
 * A handler of any context: method syntax makes its parameter bivariant, so a handler typed for
 * one phase's context (a generated `defineHandlers`) is accepted where the workflow is untyped.
 */
export type UntypedHandler = { handle(ctx: AgentContext): unknown }['handle'];

/** The workflow's types when none are given: any agent ids, any JSON trigger. */
export interface AnyWorkflow {
  trigger: Json;
  handlers: Readonly<Record<string, UntypedHandler>>;
}

/** The `agents` option: handlers (or closable adapters) keyed by the workflow's agent ids. */
export type AgentsOption<W extends WorkflowTypes> = { readonly [A in keyof W['handlers']]?: W['handlers'][A] | ClosableAgent };

/** The trigger a run of W takes. */
export type TriggerOf<W extends WorkflowTypes> = W['trigger'];
