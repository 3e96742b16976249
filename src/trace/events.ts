import type {
  Check,
  Mode,
  NextAllowedAction,
  RepeatSafety,
  ShadowVerdict,
  Status,
  UnitSummary,
} from '../contract/types.js';
import type { Lifecycle } from '../store/types.js';

/** The version of the trace format; every event carries it as `v`. Bumped on any incompatible change. */
export const TRACE_FORMAT_VERSION = 1;

/**
 * What the tool's own result claimed, before readback looked: `success` (it returned normally and did not
 * say otherwise), `failure` (it returned a body saying it failed), `accepted` (queued), `rejected` (a known
 * rejection marker), `error` (it threw or timed out), `none` (execute never ran).
 */
export type ClaimedOutcome = 'success' | 'failure' | 'accepted' | 'rejected' | 'error' | 'none';

/** How a run entered the runner: an agent's tool call, a poll of an open operation, or a reconciler pass. */
export type TraceEntry = 'run' | 'poll' | 'reconcile' | 'review';

/** Which read an `observe` event records. */
export type ReadPhase = 'baseline' | 'verify' | 'in_doubt' | 'poll';

/** Fields every trace event carries. */
export interface TraceEventBase {
  /** Trace format version ({@link TRACE_FORMAT_VERSION}). */
  v: typeof TRACE_FORMAT_VERSION;
  /** Position of the event within its call, from 1. */
  seq: number;
  /** When the event happened, by the runner's clock (ISO 8601). */
  at: string;
  runId: string;
  /** One id per tool call (`runner.run`, `poll` or reconciler drive): the key that groups a call's events. */
  callId: string;
  /** The action (tool) name. */
  action: string;
  /** Set once the operation record exists. */
  operationId?: string;
}

/** A call began: who asked, in which turn, with which tools on offer. */
export interface RunStartedEvent extends TraceEventBase {
  type: 'run.started';
  entry: TraceEntry;
  mode: Mode;
  turn?: number;
  tenant?: string;
  actor?: string;
  environment?: string;
  scope?: Record<string, string>;
  /** The names of the tools the model could choose from in this turn. */
  toolsExposed?: string[];
  /** The model's tool call id, when the caller gave one (`callId` is then the same); absent when generated. */
  toolCallId?: string;
}

/** The tool the model selected and its arguments after validation: hashed, raw only when opted in. */
export interface ToolSelectedEvent extends TraceEventBase {
  type: 'tool.selected';
  tool: string;
  valid: boolean;
  /** SHA-256 of the canonical JSON of the validated input (of the raw input when invalid); null if unhashable. */
  argsHash: string | null;
  /** The (redacted) arguments, only with `recordArguments: true`. */
  args?: unknown;
  issues?: string[];
  target?: string;
}

/** The authorization policy's decision (`policy: false` when the action has none). */
export interface PermissionDecidedEvent extends TraceEventBase {
  type: 'permission.decided';
  allowed: boolean;
  policy: boolean;
  reason?: string;
}

/** The operation record was reserved, found again by idempotency key, or joined in flight. */
export interface OperationReservedEvent extends TraceEventBase {
  type: 'operation.reserved';
  operationId: string;
  idempotencyKey: string;
  fingerprint: string;
  /** `created`: a new record; `existing`: the key was already recorded; `joined`: same call in flight here. */
  reservation: 'created' | 'existing' | 'joined';
}

/** Execute is about to be called. */
export interface ExecuteStartedEvent extends TraceEventBase {
  type: 'execute.started';
  operationId: string;
  idempotencyKey: string;
  attempt: number;
}

/** What execute returned (the claim), kept apart from anything readback observed. */
export interface ExecuteFinishedEvent extends TraceEventBase {
  type: 'execute.finished';
  operationId: string;
  attempt: number;
  durationMs: number;
  claimed: ClaimedOutcome;
  /** The raw transport result (redacted); left out with `recordResults: false`. */
  raw?: unknown;
  /** SHA-256 of the canonical raw result, in place of `raw` when `recordResults: false`. */
  rawHash?: string;
  /** How the runner read the raw result. */
  normalized: {
    kind: 'returned' | 'rejected' | 'accepted' | 'threw' | 'timed_out';
    code?: string;
    reason?: string;
    ref?: unknown;
  };
}

/** One authoritative read: the query, when it was read, what was seen and the verdict. */
export interface ObserveEvent extends TraceEventBase {
  type: 'observe';
  operationId: string;
  phase: ReadPhase;
  attempt: number;
  /** What the verifier was asked: the target and the hash of the input it was given. */
  query: { target: string; inputHash: string | null };
  /** The read time (ISO 8601). */
  readAt: string;
  durationMs: number;
  result: 'observed' | 'absent' | 'error';
  verdict?: string;
  terminal?: string;
  errorCode?: string;
  reason?: string;
  /** The observed fields the checks looked at (redacted). */
  observed?: Record<string, unknown>;
  checks?: Check[];
}

/** The operation record moved from one lifecycle state to another (or was re-written in place). */
export interface StateTransitionEvent extends TraceEventBase {
  type: 'state.transition';
  operationId: string;
  /** The store event type (`reserved`, `executing`, `accepted`, `observed`, `status`, `settled`, …). */
  event: string;
  from: Lifecycle | null;
  to: Lifecycle;
  status: Status | null;
  attempt: number;
}

/** The call ended: the completion handed back, with the claim and the verified outcome side by side. */
export interface CompletionEvent extends TraceEventBase {
  type: 'completion';
  operationId: string;
  status: Status;
  idempotencyKey: string;
  attempt: number;
  errorCode?: string;
  reason?: string;
  /** The message the agent is allowed to relay. */
  message: string;
  nextAllowedAction: NextAllowedAction;
  /** The completion's `pollAfter`: when the runner's own schedule next reads the operation (ISO 8601). */
  pollAfter?: string;
  safeToRepeat: RepeatSafety;
  /** What the last execute claimed in this call (`none` when it did not run in this call). */
  claimed: ClaimedOutcome;
  verified: boolean;
  observedAt?: string;
  evidence?: Record<string, unknown>;
  checks: Check[];
  units?: UnitSummary;
  durationMs: number;
  /** From the end of the last execute to the decision, when execute ran in this call. */
  verificationMs?: number;
  /** Shadow mode only: the live tool's claim against this status; an operator signal, never proof. */
  shadow?: ShadowVerdict;
}

/** The call threw (misuse or a broken store): no completion exists. */
export interface RunErrorEvent extends TraceEventBase {
  type: 'run.error';
  error: { name: string; code?: string; message: string };
}

/** Every trace event, discriminated by `type`. */
export type TraceEvent =
  | RunStartedEvent
  | ToolSelectedEvent
  | PermissionDecidedEvent
  | OperationReservedEvent
  | ExecuteStartedEvent
  | ExecuteFinishedEvent
  | ObserveEvent
  | StateTransitionEvent
  | CompletionEvent
  | RunErrorEvent;

/** The `type` values of trace events. */
export type TraceEventType = TraceEvent['type'];

/** Where trace events go; `write` must not block for long, and anything it throws is caught. */
export interface TraceSink {
  write(event: TraceEvent): void | Promise<void>;
  /** The event types this sink uses; when every sink lists its types, the others are never built. Default: all. */
  readonly types?: ReadonlySet<TraceEventType>;
  /**
   * Asked right after this sink took a call's `run.started`: the event types it wants for the rest of that call
   * (default: `types`). A sink with nothing to record for a call (an OpenTelemetry span that does not record, and
   * no metrics) answers with an empty set, and no other event of that call is built for it.
   */
  typesAfterStart?(started: RunStartedEvent): ReadonlySet<TraceEventType> | undefined;
  /** Waits until written events are durable (or delivered). */
  flush?(): Promise<void>;
  /** Flushes and releases resources. */
  close?(): Promise<void>;
}
