/**
 * Shadow mode: readback runs beside a live tool without changing what the tool does or returns.
 * The tool's own result goes back to the agent unchanged; the verifier still reads back, and the record
 * keeps whether the tool's claim matched what readback found. Nothing here is ever proof for a user.
 *
 * Agreement between the claim and the verified status (`ShadowVerdict.agrees`):
 * | claimed \ status               | verified, no_op | partial, failed | pending, unknown |
 * | success, accepted              | true            | false           | null (undecided) |
 * | failure, rejected, error       | false           | true (failed) / false (partial) | null |
 * | none (no execute, or lost)     | null            | null            | null             |
 */
import type {
  AnyAction,
  Completion,
  RunContext,
  ShadowClaim,
  ShadowVerdict,
  Status,
  StepContext,
} from '../contract/types.js';
import type { OperationRecord } from '../store/types.js';
import { isAccepted, isRejected } from './markers.js';
import { toCompletion } from './outcome.js';
import { describeError } from './readback.js';

/** Classifies a tool's raw result as a success or failure claim; the same shape as the trace's `claimOf`. */
export type ClaimClassifier = (raw: unknown) => 'success' | 'failure';

/** What `runner.shadow` resolves to: the tool's own result, untouched, and the operator-only completion. */
export interface ShadowResult {
  /** False when readback could not form an operation (invalid input or target, aborted): the tool did not run. */
  executed: boolean;
  /** Exactly what the action's `execute` returned (markers included); undefined when it did not run. */
  result: unknown;
  /** The verified status for operators, marked `shadow`; never show it to users as proof. */
  completion: Completion;
}

/** The verdict of one claim against one status, per the table at the top of this file. */
export function shadowVerdict(claimed: ShadowClaim, status: Status): ShadowVerdict {
  let agrees: boolean | null = null;
  if (claimed !== 'none' && status !== 'pending' && status !== 'unknown') {
    const effectHolds = status === 'verified' || status === 'no_op';
    agrees =
      claimed === 'success' || claimed === 'accepted' ? effectHolds : !effectHolds && status === 'failed';
  }
  return { claimed, status, agrees };
}

/** Marks a completion as a shadow observation: adds the verdict and replaces the user-facing message. */
export function asShadow(completion: Completion, claimed: ShadowClaim): Completion {
  const shadow = shadowVerdict(claimed, completion.status);
  const found = completion.reason ? `${completion.status} (${completion.reason})` : completion.status;
  const match = shadow.agrees === null ? 'undecided' : shadow.agrees ? 'agrees' : 'disagrees';
  return {
    ...completion,
    shadow,
    message: `Shadow observation for operators, not proof for users: the tool claimed ${claimed}; readback found ${found}; ${match}.`,
  };
}

/**
 * The shadow side of one drive: what the live tool returned or threw, and the claim it made.
 * A drive resumed later (poll, reconciler) knows only the claim, from the stored completion.
 */
export class ShadowState {
  claimed: ShadowClaim;
  private outcome: { kind: 'returned'; value: unknown } | { kind: 'threw'; error: unknown } | undefined;
  /** The operation the live tool ran under, once it ran. */
  ranUnder: Pick<OperationRecord, 'id' | 'target' | 'idempotencyKey' | 'attempt'> | undefined;

  constructor(
    claimed: ShadowClaim = 'none',
    private readonly classify?: ClaimClassifier,
  ) {
    this.claimed = claimed;
  }

  /** The state of a shadow record driven again: only its stored claim is known. */
  static resume(record: OperationRecord): ShadowState {
    return new ShadowState(record.completion?.shadow?.claimed ?? 'none');
  }

  /** Keeps the tool's result exactly as returned and classifies its claim. */
  returned(raw: unknown, record?: OperationRecord): void {
    this.outcome = { kind: 'returned', value: raw };
    if (record) this.ranUnder = record;
    this.claimed = isRejected(raw)
      ? 'rejected'
      : isAccepted(raw)
        ? 'accepted'
        : classifyClaim(raw, this.classify);
  }

  /** Keeps the tool's error exactly as thrown, to re-throw it to the caller once the record is written. */
  threw(error: unknown, record?: OperationRecord): void {
    this.outcome = { kind: 'threw', error };
    if (record) this.ranUnder = record;
    this.claimed = 'error';
  }

  /** Adds the verdict of this claim against the completion's status, and the operator-only message. */
  mark(completion: Completion): Completion {
    return asShadow(completion, this.claimed);
  }

  /** Hands the caller what the tool itself produced: its result, or its error re-thrown unchanged. */
  settle(completion: Completion): ShadowResult {
    const marked = completion.shadow ? completion : this.mark(completion);
    if (this.outcome?.kind === 'threw') throw this.outcome.error;
    return { executed: this.outcome !== undefined, result: this.outcome?.value, completion: marked };
  }
}

/** The call a shadow run could not reserve a record for. */
export interface UnrecordedCall {
  target: string;
  operationId: string;
  idempotencyKey: string;
  ctx: RunContext;
  scope: Record<string, string>;
  signal: AbortSignal;
  /** When the call started (ms). */
  now: number;
  /** The record was reserved; only the live tool's run could not be recorded. */
  recordKept?: boolean;
}

/**
 * Runs the live tool of a shadow call whose record could not be reserved (`error`: the store failed): shadow
 * never stands between the agent and its tool, so the tool runs as it would without readback, its result or
 * error kept in `state`, and operators get an unknown completion saying it ran without a record.
 */
export async function runUnrecorded(
  action: AnyAction,
  input: unknown,
  call: UnrecordedCall,
  state: ShadowState,
  error: unknown,
): Promise<Completion> {
  const { ctx, target, operationId, idempotencyKey } = call;
  const context: StepContext = {
    runId: ctx.runId,
    scope: call.scope,
    signal: call.signal,
    operationId,
    idempotencyKey,
    attempt: 1,
    startedAt: new Date(call.now),
  };
  if (ctx.actor !== undefined) context.actor = ctx.actor;
  try {
    state.returned(await action.execute(input, context));
  } catch (thrown) {
    state.threw(thrown);
  }
  const reason = call.recordKept
    ? `the operation store failed before the live tool's run was recorded, so it ran unrecorded: ${describeError(error)}`
    : `the operation store failed before the live tool ran, so it ran without a record: ${describeError(error)}`;
  return toCompletion(
    {
      target,
      operationId,
      idempotencyKey,
      attempt: 1,
      nothingExecuted: false,
      status: 'unknown',
      errorCode: 'store_unavailable',
      reason,
      next: 'ask_user',
    },
    action,
  );
}

/** True when new calls of this action go through `runner.shadow`: the action or the runner says so. */
export function isShadowed(runnerShadow: boolean, action: AnyAction): boolean {
  return runnerShadow || action.shadow === true;
}

const SHADOW_KEY_PREFIX = 'shadow:';

/**
 * The idempotency key of a shadow operation: unique per call (shadow never joins or deduplicates calls), and
 * durable proof, from reservation on, that the record is a shadow one, so a reconciler never repeats or gates it.
 */
export function shadowKey(operationId: string): string {
  return `${SHADOW_KEY_PREFIX}${operationId}`;
}

/** True for a key made by `shadowKey`. */
export function isShadowKey(key: string): boolean {
  return key.startsWith(SHADOW_KEY_PREFIX);
}

/** True for a record a shadow run reserved, whoever drives it now. */
export function isShadowRecord(record: OperationRecord): boolean {
  return isShadowKey(record.idempotencyKey) || record.completion?.shadow !== undefined;
}

/**
 * A body that says it failed (`ok: false`, `success: false`, `isError`, an `error`, an HTTP error status)
 * claims failure; anything else a non-throwing tool returns claims success. A throwing classifier means success,
 * so a broken classifier can only make readback find more disagreements, never hide one. It never throws:
 * in shadow mode a throw here would replace the live tool's result with readback's error.
 */
export function classifyClaim(raw: unknown, custom?: ClaimClassifier): 'success' | 'failure' {
  try {
    if (custom) return custom(raw) === 'failure' ? 'failure' : 'success';
    return defaultClaim(raw);
  } catch {
    // A body whose fields cannot even be read (a strict proxy, a throwing getter) claims nothing against success.
    return 'success';
  }
}

function defaultClaim(raw: unknown): 'success' | 'failure' {
  if (typeof raw !== 'object' || raw === null) return 'success';
  const r = raw as Record<string, unknown>;
  if (r.ok === false || r.success === false || r.isError === true) return 'failure';
  if (r.error !== undefined && r.error !== null && r.error !== false) return 'failure';
  const status = r.status ?? r.statusCode;
  return typeof status === 'number' && status >= 400 ? 'failure' : 'success';
}
