/**
 * readback: the runtime executes each state-changing tool, reads back the authoritative state,
 * checks the declared postcondition and returns an honest status. This root entry has no dependencies.
 */

export { canonicalJson, intentFingerprint } from './canonical.js';
export type { Clock } from './clock.js';
export { systemClock } from './clock.js';
export { DEFAULTS, defineAction, isAction } from './contract/define.js';
export { freshness } from './contract/freshness.js';
export type * from './contract/types.js';
export { STATUSES } from './contract/types.js';
export type { ReadbackErrorCode } from './errors.js';
export { ReadbackError, VerificationDenied } from './errors.js';
export { newOperationId } from './ids.js';
export * from './messages/index.js';
export type { ReviewDecision } from './runner/approval.js';
export type { Accepted, Rejected } from './runner/markers.js';
export { accepted, isAccepted, isRejected, rejected } from './runner/markers.js';
export type { OperatorResolution } from './runner/operator.js';
export { resolveByOperator } from './runner/operator.js';
export type { RunnerCode } from './runner/outcome.js';
export type { ReconcileOptions, ReconcileReport } from './runner/reconcile.js';
export type { PollOptions, Runner, RunnerOptions, RunOptions } from './runner/runner.js';
export { createRunner } from './runner/runner.js';
export type { ShadowResult } from './runner/shadow.js';
export type { CallFacts, TraceOptions } from './runner/tracer.js';
export type { StandardSchemaV1 } from './schema.js';
export { memoryStore } from './store/memory.js';
export { type PruneSweep, type PruneSweepOptions, pruneSettled } from './store/prune.js';
export type * from './store/types.js';
export {
  DEFAULT_PRUNE_LIMIT,
  MAX_PRUNE_LIMIT,
  OPEN_LIFECYCLES,
  RECORD_SCHEMA_VERSION,
} from './store/types.js';
export * from './trace/index.js';
