/** The throwing edge over the compiler, shaped like the reference SDK's WorkflowSpec. */
import { readFileSync } from 'node:fs';
import type { Json } from '../core/json.js';
import { parseWorkflow, parseWorkflowBytes, type CompileResult } from '../workflow/compile.js';
import { WorkflowValidationError } from '../workflow/errors.js';
import type { PhaseModel, WorkflowModel } from '../workflow/model.js';
import { error } from '../diagnostics/diagnostic.js';
import { BatonError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { resolveTaskInputs, validateClaimInputs, validateTaskOutputs, type ClaimOptions, type ResolveOptions, type UpstreamOutputs } from '../workflow/runtime.js';

/** RFC-0024 §7: an IntentSpec keeps the phase's inputs and outputs so any executor can wire them. */
export interface IntentSpec {
  name: string;
  title: string;
  description: string;
  assign: string;
  depends_on: string[];
  constraints: string[];
  initial_state: Record<string, Json>;
  inputs: Record<string, string>;
  outputs: Record<string, string | { type: string; required: boolean }>;
}

export interface PortfolioSpec {
  name: string;
  version: string;
  description: string;
  governance: WorkflowModel['governance'];
  intents: IntentSpec[];
}

export class WorkflowSpec {
  private constructor(
    readonly model: WorkflowModel,
    /** Warnings found while compiling (errors would have thrown). */
    readonly warnings: CompileResult['diagnostics'],
  ) {}

  /** Reads and compiles a workflow file; throws WorkflowValidationError with every diagnostic. */
  static fromYaml(path: string): WorkflowSpec {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch (e) {
      throw new WorkflowValidationError(path, [error('file-unreadable', [], `cannot read ${path}: ${(e as Error).message}`)]);
    }
    // bytes, not 'utf8': a file that is not UTF-8 is reported (not-utf8), never read with U+FFFD in its place
    return WorkflowSpec.fromResult(parseWorkflowBytes(bytes, { file: path }));
  }

  static fromString(text: string, opts: { file?: string } = {}): WorkflowSpec {
    return WorkflowSpec.fromResult(parseWorkflow(text, opts));
  }

  static fromResult(result: CompileResult): WorkflowSpec {
    if (!result.ok || !result.model) throw new WorkflowValidationError(result.file, result.diagnostics);
    return new WorkflowSpec(result.model, result.diagnostics);
  }

  get name(): string {
    return this.model.info.name;
  }

  get phases(): PhaseModel[] {
    return this.model.phases;
  }

  phase(name: string): PhaseModel | undefined {
    return this.model.byName.get(name);
  }

  toPortfolioSpec(): PortfolioSpec {
    return toPortfolioSpec(this.model);
  }

  /** RFC-0024 §3.2 on a phase of this spec (see workflow/runtime.ts). */
  resolveTaskInputs(phase: string, upstreamOutputs: UpstreamOutputs, opts: ResolveOptions = {}): JsonObject {
    return resolveTaskInputs(this.requirePhase(phase), upstreamOutputs, opts);
  }

  /** RFC-0024 §3.1 on a phase of this spec: UpstreamIntentSuspendedError, then UnresolvableInputError. */
  validateClaimInputs(phase: string, upstreamOutputs: UpstreamOutputs, opts: ClaimOptions = {}): JsonObject {
    return validateClaimInputs(this.requirePhase(phase), upstreamOutputs, opts);
  }

  /** RFC-0024 §3.3 on a phase of this spec: MissingOutputError, then OutputTypeMismatchError. */
  validateTaskOutputs(phase: string, output: unknown, opts: { taskId?: string } = {}): JsonObject {
    return validateTaskOutputs(this.requirePhase(phase), output, opts);
  }

  private requirePhase(name: string): PhaseModel {
    const p = this.model.byName.get(name);
    if (!p) throw new BatonError('usage', `workflow \`${this.name}\` has no phase \`${name}\``);
    return p;
  }
}

export function toPortfolioSpec(model: WorkflowModel): PortfolioSpec {
  return {
    name: model.info.name,
    version: model.info.version,
    description: model.info.description ?? '',
    governance: model.governance,
    intents: model.phases.map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description ?? '',
      assign: p.assign,
      depends_on: [...p.dependsOn],
      constraints: [...p.constraints],
      initial_state: { ...p.initialState },
      inputs: Object.fromEntries((p.inputs ?? []).map((b) => [b.name, b.ref])),
      outputs: Object.fromEntries((p.outputs ?? []).map((o) => [o.key, o.required ? o.type.text : { type: o.type.text, required: false }])),
    })),
  };
}
