/** Run-level errors of the engine (contract errors of RFC-0024 live in workflow/errors.ts). */
import { roundUsd } from './result.js';

/** `BudgetExceededError.toJSON()`: the `run.failed` failure's details. */
export type BudgetExceededPayload = { error: 'BudgetExceededError'; scope: 'phase' | 'run'; phase_name?: string; budget_usd: number; spent_usd: number; message: string };

/** A phase or run budget was exceeded: the run stops. `toJSON()` is the `run.failed` payload. */
export class BudgetExceededError extends Error {
  readonly error = 'BudgetExceededError';
  override readonly name = 'BudgetExceededError';
  constructor(
    readonly scope: 'phase' | 'run',
    readonly budget_usd: number,
    readonly spent_usd: number,
    readonly phase_name?: string,
  ) {
    super(
      scope === 'phase'
        ? `phase '${phase_name ?? ''}' spent $${roundUsd(spent_usd)}, over its budget of $${budget_usd} (cost_tracking.budget_usd)`
        : `the run spent $${roundUsd(spent_usd)}, over its budget of $${budget_usd} (governance.max_cost_usd)`,
    );
  }
  toJSON(): BudgetExceededPayload {
    return {
      error: this.error,
      scope: this.scope,
      ...(this.phase_name !== undefined ? { phase_name: this.phase_name } : {}),
      budget_usd: this.budget_usd,
      spent_usd: roundUsd(this.spent_usd),
      message: this.message,
    };
  }
}
