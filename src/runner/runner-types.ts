import type { Clock } from '../clock.js';
import type { Action, AnyAction, Completion, RunContext } from '../contract/types.js';
import type { OperationStore } from '../store/types.js';
import type { ReviewDecision } from './approval.js';
import type { ReconcileOptions, ReconcileReport } from './reconcile.js';
import type { ShadowResult } from './shadow.js';
import type { TraceOptions } from './tracer.js';

/** Options for `createRunner`; every field has a safe default. */
export interface RunnerOptions {
  /** Where operation records live; defaults to an in-memory store. */
  store?: OperationStore;
  clock?: Clock;
  /** Actions known up front, so `poll` can resume their operations after a restart. */
  actions?: AnyAction[];
  /** Re-executions allowed after an ambiguous attempt is proven absent (only for safe-to-repeat actions). */
  retryBudget?: number;
  /** Source of randomness for backoff jitter; injectable for deterministic tests. */
  random?: () => number;
  /** Operation id generator; by default `newOperationId` (`op_` and a time-ordered UUIDv7). */
  newId?: () => string;
  /** The run record: typed events for every step, redacted, sent to these sinks. Off (and free) by default. */
  trace?: TraceOptions;
  /**
   * Shadow mode for every action: calls go through `runner.shadow`, which returns the live tool's own result
   * unchanged and records whether its claim matched the verified status (never shown to users as proof).
   * The claim is read from the raw result as the trace reads it (`trace.claimOf` when given).
   */
  shadow?: boolean;
}

/** The context of one `runner.run` call: the run context plus facts recorded in the trace. */
export interface RunOptions extends RunContext {
  /** The agent turn this tool call belongs to. */
  turn?: number;
  tenant?: string;
  /** Deployment environment (`production`, `staging`, …). */
  environment?: string;
  /** The names of the tools the model could choose from when it made this call. */
  toolsExposed?: string[];
  /** The model's tool call id (`gen_ai.tool.call.id`); one is generated when absent. */
  toolCallId?: string;
}

/** Options for `runner.poll`. */
export interface PollOptions {
  signal?: AbortSignal;
  /**
   * Wait within the remaining poll budget instead of reading once; parked work is first waited for until it
   * is due (`pollAfter`). Without it, a poll of parked work not yet due returns its pending completion unread.
   */
  wait?: boolean;
  actor?: string;
}

/** Executes actions, reads back their effects and returns honest completions. */
export interface Runner {
  readonly store: OperationStore;
  readonly clock: Clock;
  /** Runs one action call; resolves to a Completion for every outcome, throws only on misuse. */
  run<I, O>(action: Action<I, O>, input: unknown, ctx: RunOptions): Promise<Completion>;
  /**
   * Runs a shadow-mode action call: resolves to the tool's own result, unchanged, beside an operator-only
   * completion; an error the tool threw is re-thrown unchanged once the record is written. Readback never
   * gates, deduplicates, repeats or waits on the call; accepted work is left `pending` for the reconciler.
   */
  shadow<I, O>(action: Action<I, O>, input: unknown, ctx: RunOptions): Promise<ShadowResult>;
  /**
   * Advances an open operation (reads back, never re-executes unsafe work); settled ones return as recorded,
   * and parked accepted work polled before its `pollAfter` returns as stored, without a read (see PollOptions).
   */
  poll(operationId: string, options?: PollOptions): Promise<Completion>;
  /** Records a reviewer's approval of an operation awaiting it; the next run or poll executes it once. */
  approve(operationId: string, decision: ReviewDecision): Promise<Completion>;
  /** Records a reviewer's rejection: the operation settles `failed` and nothing is executed. */
  reject(operationId: string, decision: ReviewDecision): Promise<Completion>;
  /** Claims due operations with leases and drives them on; see `ReconcileOptions`. */
  reconcile(options?: ReconcileOptions): Promise<ReconcileReport>;
  /** Makes an action known to `poll`; `run` registers actions itself. */
  register(action: AnyAction): void;
  /** The registered action with this name, if any. */
  action(name: string): AnyAction | undefined;
  /** True when calls of this action must go through `shadow` (the runner's or the action's `shadow: true`). */
  inShadow(action: AnyAction): boolean;
}
