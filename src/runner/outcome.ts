import { isoTime } from '../clock.js';
import type {
  AnyAction,
  Check,
  Completion,
  CompletionDraft,
  NextAllowedAction,
  RepeatSafety,
  Status,
  UnitSummary,
} from '../contract/types.js';
import { formMessage } from '../messages/templates.js';
import { createRedactor, type Redactor } from '../trace/redact.js';

/** Error codes the runner itself produces; actions add their own through `rejected(code, ...)`. */
export type RunnerCode =
  | 'invalid_input'
  | 'invalid_target'
  | 'not_authorized'
  | 'idempotency_conflict'
  | 'baseline_unavailable'
  | 'aborted'
  | 'readback_mismatch'
  | 'wrong_scope'
  | 'wrong_target'
  | 'stale_read'
  | 'effect_absent'
  | 'in_flight'
  | 'in_progress'
  | 'provider_failed'
  | 'target_busy'
  | 'verifier_unavailable'
  | 'verification_denied'
  | 'verifier_timeout'
  | 'unusable_observation'
  | 'invalid_expectation'
  | 'poll_budget_exhausted'
  | 'unverifiable'
  | 'awaiting_approval'
  | 'rejected_by_reviewer'
  | 'not_executed'
  | 'store_unavailable'
  | 'transport_error';

/** The facts from which one completion is formed. */
export interface Outcome {
  status: Status;
  target: string;
  operationId: string;
  idempotencyKey: string;
  attempt: number;
  /** True when execute was never called for this operation: repeating it cannot double an effect. */
  nothingExecuted: boolean;
  observedAt?: number;
  evidence?: Record<string, unknown>;
  checks?: Check[];
  units?: UnitSummary;
  errorCode?: RunnerCode | (string & {});
  reason?: string;
  /** Overrides the derived next action (e.g. `ask_user` once the retry budget is spent). */
  next?: NextAllowedAction;
  /** When the record is next due (its `nextPollAt`); shown as `pollAfter` when the next action is `poll`. */
  pollAfter?: number;
}

const REPAIRABLE = new Set(['invalid_input', 'invalid_target', 'readback_mismatch', 'idempotency_conflict']);
const POLLABLE = new Set([
  'in_flight',
  'in_progress',
  'stale_read',
  'verifier_unavailable',
  'verifier_timeout',
  'poll_budget_exhausted',
  'unusable_observation',
  'aborted',
]);

/** What the agent may do next, given how the operation ended. */
export function nextAllowedAction(outcome: Outcome, action: AnyAction): NextAllowedAction {
  if (outcome.next) return outcome.next;
  switch (outcome.status) {
    case 'verified':
    case 'no_op':
      return 'none';
    case 'pending':
      return 'poll';
    case 'partial':
      return 'repair';
    case 'unknown':
      return outcome.errorCode && POLLABLE.has(outcome.errorCode) ? 'poll' : 'ask_user';
    case 'failed':
      // The target is another tenant's: the same call would reach it again, and a write may have landed there.
      // A misdirected read (the baseline read another record) would be misdirected again on the same call.
      if (outcome.errorCode === 'wrong_scope' || outcome.errorCode === 'wrong_target') return 'ask_user';
      if (outcome.nothingExecuted && !REPAIRABLE.has(outcome.errorCode ?? '')) {
        return outcome.errorCode === 'not_authorized' ? 'ask_user' : 'retry';
      }
      if (REPAIRABLE.has(outcome.errorCode ?? '')) return 'repair';
      return action.safeToRepeat === true && outcome.errorCode !== 'provider_failed' ? 'retry' : 'ask_user';
  }
}

/** Whether running the same call again is safe: always when nothing executed, else as the action declares. */
export function safeToRepeat(outcome: Outcome, action: AnyAction): RepeatSafety {
  return outcome.nothingExecuted ? true : action.safeToRepeat;
}

/** Forms the completion, including the status-bound message. */
export function toCompletion(outcome: Outcome, action: AnyAction): Completion {
  // Built field by field in the order the completion's JSON shows them (optional ones only when set),
  // then given its message: one object, where spreading a draft into the result made three per call.
  const draft: CompletionDraft = {
    status: outcome.status,
    action: action.name,
    target: outcome.target,
    operationId: outcome.operationId,
    idempotencyKey: outcome.idempotencyKey,
    attempt: outcome.attempt,
    postcondition: action.postcondition,
    mode: action.mode,
  } as CompletionDraft;
  if (outcome.observedAt !== undefined) draft.observedAt = isoTime(outcome.observedAt);
  if (outcome.evidence) draft.evidence = outcome.evidence;
  draft.checks = outcome.checks ?? [];
  if (outcome.units) draft.units = outcome.units;
  if (outcome.errorCode) draft.errorCode = outcome.errorCode;
  if (outcome.reason) draft.reason = redactReason(outcome.reason);
  draft.nextAllowedAction = nextAllowedAction(outcome, action);
  // A due time only helps a caller told to poll: one told to ask the user must not read it as "try later".
  if (outcome.pollAfter !== undefined && draft.nextAllowedAction === 'poll') {
    draft.pollAfter = isoTime(outcome.pollAfter);
  }
  draft.safeToRepeat = safeToRepeat(outcome, action);
  const completion = draft as Completion;
  const formed = formMessage(draft, action.messages);
  if (formed.overrideRejected !== undefined) warnOverride(action, draft.status, formed.overrideRejected);
  completion.message = formed.message;
  return completion;
}

// Per action, the statuses whose override was refused at run time and already reported.
const warned = new WeakMap<AnyAction, Set<Status>>();

// An override refused at run time (it threw, or claimed the effect on a completion the definition-time probe did
// not cover) is replaced by the default message; its author hears of it once per action and status.
function warnOverride(action: AnyAction, status: Status, why: string): void {
  let statuses = warned.get(action);
  if (statuses === undefined) {
    statuses = new Set();
    warned.set(action, statuses);
  }
  if (statuses.has(status)) return;
  statuses.add(status);
  process.emitWarning(
    `action "${action.name}": ${why}; the default message was used instead`,
    'ReadbackMessageWarning',
  );
}

let reasons: Redactor | undefined;

// A reason often quotes an error from a store, a verifier or a validator (a connection string with its password,
// a request's Authorization header), and the completion goes to the model and to MCP clients: the trace's
// built-in rules take the secrets out of it. Reasons are rare on the happy path, so the redactor is made lazily.
function redactReason(reason: string): string {
  reasons ??= createRedactor();
  return reasons.redactField('reason', reason) as string;
}
