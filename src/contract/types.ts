import type { StandardSchemaV1 } from '../schema.js';

/** The six honest outcomes; only the runtime can produce `verified`. */
export type Status = 'verified' | 'pending' | 'failed' | 'partial' | 'no_op' | 'unknown';

/** All statuses, in a stable order. */
export const STATUSES: readonly Status[] = ['verified', 'pending', 'failed', 'partial', 'no_op', 'unknown'];

/** What an action's execute step can promise about its effect. */
export type Mode = 'committed' | 'accepted' | 'optimistic';

/** What the agent may do next with this operation. */
export type NextAllowedAction = 'none' | 'poll' | 'repair' | 'ask_user' | 'retry';

/** How an accepted operation's observed state is classified while polling. */
export type TerminalState = 'running' | 'succeeded' | 'failed';

/** Whether repeating the call is safe: known yes, known no, or undecided. */
export type RepeatSafety = boolean | 'unknown';

/** Context given by the caller of `runner.run`. */
export interface RunContext {
  runId: string;
  scope?: Record<string, string>;
  actor?: string;
  signal?: AbortSignal;
  /** Overrides the derived idempotency key for this call. */
  idempotencyKey?: string;
  /** Accepted mode: wait within the poll budget (default) or return `pending` at once. */
  wait?: boolean;
}

/** Context handed to every step of an action once its operation record exists. */
export interface StepContext extends RunContext {
  scope: Record<string, string>;
  signal: AbortSignal;
  operationId: string;
  idempotencyKey: string;
  attempt: number;
  /** When this attempt's execute step started (or the run, before execute). */
  startedAt: Date;
  /** The baseline read from `before`, when the action declares one. */
  before?: unknown;
}

/** One named condition that passed or failed, with what was expected and what was seen. */
export interface Check {
  name: string;
  pass: boolean;
  expected?: unknown;
  observed?: unknown;
}

/** One unit of a batch: a target with its expected fields and its observed record (null when absent). */
export interface Unit {
  target: string;
  expected: Record<string, unknown>;
  observed: Record<string, unknown> | null;
}

/** What `expect` returns: expected fields, named checks, or batch units. */
export type Expectation = Record<string, unknown> | Check[] | Unit[];

/** A freshness rule: tells a fresh observation from an old one that merely matches. */
export type FreshnessRule<I = unknown, O = unknown> = (
  observed: O,
  ctx: StepContext,
  input: I,
) => boolean | Check;

/** Counts of a batch's units. */
export interface UnitSummary {
  required: number;
  passed: number;
  failed: number;
  failedTargets: string[];
}

/**
 * What a live tool's own result claimed, in shadow mode: `success` (returned normally, body does not say it
 * failed), `failure` (body says it failed), `accepted` (queued), `rejected` (a rejection marker), `error` (it
 * threw or timed out), `none` (not known: execute did not run, or the claim was lost with a crashed process).
 */
export type ShadowClaim = 'success' | 'failure' | 'accepted' | 'rejected' | 'error' | 'none';

/** Whether the live tool's claim matched the verified status; `agrees` is null while undecided. */
export interface ShadowVerdict {
  claimed: ShadowClaim;
  status: Status;
  agrees: boolean | null;
}

/** The honest result of running one action; every outcome resolves to one of these. */
export interface Completion {
  status: Status;
  action: string;
  target: string;
  operationId: string;
  idempotencyKey: string;
  attempt: number;
  postcondition: string;
  mode: Mode;
  observedAt?: string;
  evidence?: Record<string, unknown>;
  checks: Check[];
  units?: UnitSummary;
  errorCode?: string;
  reason?: string;
  nextAllowedAction: NextAllowedAction;
  /**
   * When the runner's own schedule next reads this open operation back (ISO 8601), set only when the next
   * action is `poll`: a `poll` of accepted work before then is answered from the record without a read.
   */
  pollAfter?: string;
  safeToRepeat: RepeatSafety;
  message: string;
  /** Set on shadow observations only: for operators, never proof for users (the agent got the tool's result). */
  shadow?: ShadowVerdict;
}

/** Settle window for lagging reads in committed mode. */
export interface SettlePolicy {
  timeoutMs: number;
  intervalMs: number;
}

/** Poll budget for accepted work: duration and reads, with exponential backoff and jitter. */
export interface PollPolicy {
  maxDurationMs: number;
  maxReads: number;
  initialDelayMs: number;
  maxDelayMs: number;
  /** Fraction of each delay that is randomized, 0..1. */
  jitter: number;
}

/** A completion before its message is formed. */
export type CompletionDraft = Omit<Completion, 'message'>;

/** A message override for one status. */
export type MessageTemplate = (completion: CompletionDraft) => string;

/** The result of an authorization policy. */
export type AuthorizeResult = boolean | { allowed: true } | { allowed: false; reason: string };

/** What a user writes: the completion contract of one state-changing tool. */
export interface ActionContract<I, O> {
  name: string;
  description: string;
  /** The system of record whose read decides the postcondition ("helpdesk tickets API"); `readback audit` asks for it. */
  system?: string;
  input: StandardSchemaV1<unknown, I>;
  target(input: I): string;
  mode?: Mode;
  postcondition: string;
  before?(input: I, ctx: StepContext): Promise<O | null> | O | null;
  execute(input: I, ctx: StepContext): Promise<unknown> | unknown;
  observe?(input: I, ctx: StepContext): Promise<O | null> | O | null;
  expect?(input: I, observed: O, ctx: StepContext): Expectation;
  acceptable?(input: I, observed: O): boolean;
  fresh?: FreshnessRule<I, O>;
  scopeOf?(observed: O): Record<string, string> | undefined;
  /**
   * The target identifier the observed record belongs to, compared with `target(input)`: a read of another
   * record (a misrouted id, a list's first row) then never passes, whatever its fields. For batch units it is
   * called on each unit's observed record (declare its parameter `unknown`) and compared with the unit's `target`.
   */
  targetOf?(observed: O): string;
  terminal?(observed: O): TerminalState;
  idempotencyKey?(input: I, ctx: RunContext): string;
  safeToRepeat?: RepeatSafety;
  maxInFlightMs?: number;
  settle?: Partial<SettlePolicy>;
  poll?: Partial<PollPolicy>;
  verifyTimeoutMs?: number;
  executeTimeoutMs?: number;
  authorize?(input: I, ctx: RunContext): AuthorizeResult | Promise<AuthorizeResult>;
  /** When true for a call, the run parks as `pending` (`ask_user`) until `runner.approve` records a reviewer's yes. */
  needsApproval?(input: I, ctx: RunContext): boolean | Promise<boolean>;
  messages?: Partial<Record<Status, MessageTemplate>>;
  /**
   * Shadow mode for rolling readback out under a live tool: call it with `runner.shadow`, which returns the
   * tool's own result unchanged and records whether its claim matched the verified status.
   */
  shadow?: boolean;
}

/** A validated contract with every default resolved; produced only by `defineAction`. */
export interface Action<I = unknown, O = unknown>
  extends Omit<
    ActionContract<I, O>,
    'mode' | 'safeToRepeat' | 'maxInFlightMs' | 'settle' | 'poll' | 'verifyTimeoutMs' | 'executeTimeoutMs'
  > {
  readonly kind: 'readback.action';
  mode: Mode;
  safeToRepeat: RepeatSafety;
  maxInFlightMs: number;
  settle: SettlePolicy;
  poll: PollPolicy;
  verifyTimeoutMs: number;
  executeTimeoutMs: number;
}

/** Any action, whatever its input and observation types. */
// biome-ignore lint/suspicious/noExplicitAny: an action list mixes input types; each run re-infers them.
export type AnyAction = Action<any, any>;
