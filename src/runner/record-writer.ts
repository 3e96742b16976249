import type { Clock } from '../clock.js';
import type { AnyAction, Completion, RunContext, Status } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { storableCopy } from '../store/records.js';
import type {
  Lifecycle,
  NewEvent,
  OperationRecord,
  OperationStore,
  RecordPatch,
  TransitionGuard,
} from '../store/types.js';
import { type Outcome, toCompletion } from './outcome.js';
import type { Reading } from './readback.js';
import { isShadowRecord, ShadowState } from './shadow.js';
import { type RunTrace, settle } from './trace.js';
import type { Tracer } from './tracer.js';

// The longest wait between two reads of an operation no read could decide (see `unresolved`).
const MAX_UNRESOLVED_DELAY_MS = 3_600_000;

/** What every operation drive shares with its runner. */
export interface DriveEnv {
  store: OperationStore;
  clock: Clock;
  random: () => number;
  /** How many times the runner may re-execute after proving an ambiguous attempt did not land. */
  retryBudget: number;
  /** Present only when trace sinks are configured. */
  tracer?: Tracer | undefined;
}

/** The run a drive acts for: its signal, actor, trace and shadow state. */
export type DriveRun = Pick<RunContext, 'signal' | 'actor'> & {
  signal: AbortSignal;
  /**
   * A reconciler's stop: once it aborts, the drive starts no new execute (a retry is left due for the next run),
   * while its steps, reads and writes finish as they would (they never see it).
   */
  stopping?: AbortSignal | undefined;
  trace?: RunTrace | undefined;
  shadow?: ShadowState | undefined;
};

/**
 * Gives back a lease still held under `leaseToken` on `record` as last read (a write naming nothing else): the
 * operation is claimable again when due. Resolves to whether it was given back.
 */
export async function giveBackLease(
  store: OperationStore,
  record: OperationRecord,
  leaseToken: string,
  actor: string | null,
  now: number,
): Promise<boolean> {
  const released = await store.transition(
    record.id,
    [record.lifecycle],
    { leaseOwner: null, leaseToken: null, leaseExpiresAt: null, updatedAt: now },
    {
      type: 'lease_released',
      at: now,
      from: record.lifecycle,
      to: record.lifecycle,
      status: record.status,
      actor,
      attempt: record.attempt,
    },
    { leaseToken },
  );
  return released !== null;
}

/**
 * The persistence half of a drive: it holds the operation record as last seen and writes every change
 * as a compare-and-set on that lifecycle (with the lease token when a reconciler drives), forming the
 * completion each outcome is stored with. `Drive` adds the decisions on top.
 */
export class RecordWriter {
  protected pendingDetail: Record<string, unknown> = {};
  /** Fields of a poll read folded into the next write (see Drive.judgeAccepted). */
  protected pendingPatch: RecordPatch = {};
  /** Set in shadow mode: readback then never gates, repeats or delays the live tool, it only observes. */
  protected readonly shadow: ShadowState | undefined;
  /** Set when the last write had to store some text in its rendered form (see `rendered`). */
  private renderedWrite = false;

  constructor(
    protected readonly env: DriveEnv,
    protected readonly action: AnyAction,
    protected record: OperationRecord,
    protected readonly run: DriveRun,
    /** Set when a reconciler drives the record under a lease: every write must present it. */
    protected readonly leaseToken?: string,
  ) {
    this.shadow = run.shadow ?? (isShadowRecord(record) ? ShadowState.resume(record) : undefined);
  }

  /** The open lifecycle accepted work returns to after a read: `running` once seen running, else `accepted`. */
  protected openLifecycle(): Lifecycle {
    return this.record.lifecycle === 'running' ? 'running' : 'accepted';
  }

  /** The read contradicts the postcondition: settle `failed` with the failed checks. */
  protected mismatch(reading: Reading, reason: string, seen: Partial<Outcome> = {}): Promise<Completion> {
    return this.finish({
      ...seen,
      observedAt: reading.at,
      status: 'failed',
      errorCode: 'readback_mismatch',
      reason,
    });
  }

  /**
   * The read could not decide (the verifier failed, or saw an old copy): keep the record open and due again,
   * with the operation id for recovery. It is never given up on its own, since the verifier may come back
   * after any outage, but the longer it has been undecided the rarer the reads: a quarter of the time since
   * the attempt, at least `poll.maxDelayMs` and at most an hour. A verifier that never recovers then costs a
   * read and an event an hour, not one every few seconds forever.
   */
  protected unresolved(
    reading: { at: number; code: string; reason: string },
    seen: Partial<Outcome> = {},
  ): Promise<Completion> {
    return this.park(
      { ...seen, status: 'unknown', errorCode: reading.code, reason: reading.reason },
      this.record.lifecycle,
      this.undecidedRetryAt(reading.at, this.record),
    );
  }

  /** When an operation no read could decide at `at` is next due (see `unresolved`). */
  protected undecidedRetryAt(
    at: number,
    record: Pick<OperationRecord, 'executedAt' | 'requestedAt'>,
  ): number {
    const undecidedFor = at - (record.executedAt ?? record.requestedAt);
    const delay = Math.max(this.action.poll.maxDelayMs, Math.min(MAX_UNRESOLVED_DELAY_MS, undecidedFor / 4));
    return at + Math.round(delay);
  }

  protected stayRequested(partial: Partial<Outcome> & Pick<Outcome, 'status'>): Promise<Completion> {
    // Nothing ran, so the record stays re-runnable: the same call with the same key may try again.
    return this.park(partial, 'requested', null);
  }

  protected finish(partial: Partial<Outcome> & Pick<Outcome, 'status'>, final = false): Promise<Completion> {
    const outcome = this.outcome(partial);
    const settles = final || ['verified', 'failed', 'partial', 'no_op'].includes(outcome.status);
    return settles ? this.write(outcome, 'settled', null) : this.park(partial, this.record.lifecycle, null);
  }

  protected park(
    partial: Partial<Outcome> & Pick<Outcome, 'status'>,
    to: Lifecycle,
    nextPollAt: number | null,
  ) {
    return this.write(this.outcome(partial), to, nextPollAt);
  }

  protected write(outcome: Outcome, to: Lifecycle, nextPollAt: number | null): Promise<Completion> {
    // A promise chain rather than an async function: every settle passes here, and each async layer costs
    // a promise and its turns. A throw (a user's message template, say) still becomes a rejection.
    return settle(() => this.writeOutcome(outcome, to, nextPollAt));
  }

  private writeOutcome(outcome: Outcome, to: Lifecycle, nextPollAt: number | null): Promise<Completion> {
    // The completion stored with an open record says when it is due (`pollAfter`), so a caller can pace its
    // polls by it and an early poll can be answered from the record (see `parkedDue`).
    if (nextPollAt !== null) outcome.pollAfter = nextPollAt;
    const completion = this.form(outcome);
    const patch: RecordPatch = { lifecycle: to, status: outcome.status, completion, nextPollAt };
    this.releaseLease(patch);
    if (outcome.observedAt !== undefined) patch.lastObservedAt = outcome.observedAt;
    const detail: Record<string, unknown> = { errorCode: outcome.errorCode ?? null };
    if (completion.shadow) detail.shadow = completion.shadow;
    this.renderedWrite = false;
    // An approval puts a record back to `requested`: a write from there also checks the status this drive saw,
    // so a drive that began before the approval cannot park the approved operation again or fail it.
    const seen = this.record.lifecycle === 'requested' ? { status: this.record.status } : undefined;
    return this.move(
      [this.record.lifecycle],
      patch,
      { type: to === 'settled' ? 'settled' : 'status', detail },
      undefined,
      seen,
    ).then((ok) => {
      if (!ok) return this.superseded();
      // What was stored is what every later read returns: answer with it when text had to be rendered.
      return this.renderedWrite && this.record.completion ? this.record.completion : completion;
    });
  }

  /**
   * Under a reconciler's lease, makes `patch` (the drive's last write) give the lease back, so the record is
   * claimable again when next due.
   */
  protected releaseLease(patch: RecordPatch): void {
    if (!this.leaseToken) return;
    patch.leaseOwner = null;
    patch.leaseToken = null;
    patch.leaseExpiresAt = null;
  }

  /** Why no new execute may start now (the caller aborted, or the reconciler driving this is stopping), if so. */
  protected executeBlocked(): 'aborted' | 'the reconciler stopped' | undefined {
    if (this.run.signal.aborted) return 'aborted';
    return this.run.stopping?.aborted ? 'the reconciler stopped' : undefined;
  }

  protected outcome(partial: Partial<Outcome> & Pick<Outcome, 'status'>): Outcome {
    return {
      target: this.record.target,
      operationId: this.record.id,
      idempotencyKey: this.record.idempotencyKey,
      attempt: this.record.attempt,
      nothingExecuted: this.record.attempt === 0,
      ...partial,
    };
  }

  /** Another driver moved the record first: report what it recorded rather than acting twice. */
  protected async superseded(): Promise<Completion> {
    const latest = await this.env.store.get(this.record.id);
    if (latest) this.record = latest;
    if (latest?.completion && latest.lifecycle === 'settled') return latest.completion;
    // A reconciler that lost the record to another writer gives its lease back, so that whoever finds it due next
    // may claim it, rather than everyone waiting for the lease to lapse. Best effort: a lease left lapses anyway.
    if (latest && this.leaseToken !== undefined && latest.leaseToken === this.leaseToken) {
      const now = this.env.clock.now();
      await giveBackLease(this.env.store, latest, this.leaseToken, this.run.actor ?? null, now).catch(
        () => false,
      );
    }
    return this.form(
      this.outcome({
        status: 'pending',
        errorCode: 'in_progress',
        reason: 'another worker is driving this operation',
      }),
    );
  }

  protected form(outcome: Outcome): Completion {
    const completion = toCompletion(outcome, this.action);
    return this.shadow ? this.shadow.mark(completion) : completion;
  }

  protected shadowClaim(): { shadowClaim?: string } {
    return this.shadow ? { shadowClaim: this.shadow.claimed } : {};
  }

  /** Where this drive stands: identity and the attempt last recorded in the store. */
  position(): Pick<Outcome, 'target' | 'operationId' | 'idempotencyKey' | 'attempt'> {
    const r = this.record;
    return { target: r.target, operationId: r.id, idempotencyKey: r.idempotencyKey, attempt: r.attempt };
  }

  /** The stored completion of this record, or a pending one when none was decided yet. */
  current(): Promise<Completion> | Completion {
    return this.record.completion ?? this.superseded();
  }

  /** Writes the transition `from` → `patch` with its event; false when another writer moved the record first. */
  protected move(
    from: readonly Lifecycle[],
    patch: RecordPatch,
    event: Pick<NewEvent, 'type' | 'detail'>,
    attempt?: number,
    seen?: { status: Status | null },
  ): Promise<boolean> {
    return settle(() => this.moveRecord(from, patch, event, attempt, seen));
  }

  private moveRecord(
    from: readonly Lifecycle[],
    patch: RecordPatch,
    event: Pick<NewEvent, 'type' | 'detail'>,
    attempt: number | undefined,
    seen: { status: Status | null } | undefined,
  ): Promise<boolean> {
    const now = this.env.clock.now();
    const record = this.record;
    const was = record.lifecycle;
    const pending = this.pendingDetail;
    this.pendingDetail = {};
    const folded = this.pendingPatch;
    this.pendingPatch = {};
    // The objects below are built field by field, each in one fixed shape: spreads of the many shapes
    // callers pass were a measurable share of a fast action's cost. `patch` is always a fresh literal
    // of this drive's, so it may take `updatedAt` itself.
    const full: RecordPatch = hasKeys(folded) ? Object.assign({}, folded, patch) : patch;
    full.updatedAt = now;
    const next: NewEvent = {
      type: event.type,
      at: now,
      from: was,
      to: patch.lifecycle ?? record.lifecycle,
      status: patch.status ?? record.status,
      actor: this.run.actor ?? record.actor,
      attempt: patch.attempt ?? record.attempt,
    };
    const detail = hasKeys(pending) ? Object.assign(pending, event.detail) : event.detail;
    if (detail !== undefined && hasKeys(detail)) next.detail = detail;
    const guard: TransitionGuard = {};
    if (attempt !== undefined) guard.attempt = attempt;
    if (this.leaseToken) guard.leaseToken = this.leaseToken;
    if (seen) guard.status = seen.status;
    const applied = (moved: OperationRecord | null): boolean => {
      if (!moved) return false;
      this.record = moved;
      this.run.trace?.transition(event.type, was, moved, next.at);
      return true;
    };
    // One `then` with both handlers: the refusal path costs nothing on a write that succeeds.
    return settle(() => this.env.store.transition(record.id, from, full, next, guard)).then(
      applied,
      (error) => this.rendered(error, record.id, from, full, next, guard).then(applied),
    );
  }

  /**
   * The store refused text the write carries (see `requireStorableText`): caller data such as evidence, a
   * provider's reference or an execute result, which the effect already produced. Refusing it again on
   * every retry would leave the operation open forever, so the write is made once more with each such
   * text in a marked, escaped rendering, and the event names the fields rendered. Any other error stands.
   */
  private rendered(
    error: unknown,
    id: string,
    from: readonly Lifecycle[],
    patch: RecordPatch,
    event: NewEvent,
    guard: TransitionGuard,
  ): Promise<OperationRecord | null> {
    if (!(error instanceof ReadbackError) || error.code !== 'unstorable_value') throw error;
    const found: string[] = [];
    const fixed: Record<string, unknown> = {};
    for (const key of Object.keys(patch)) {
      fixed[key] = storableCopy((patch as Record<string, unknown>)[key], key, found);
    }
    const detail = storableCopy(event.detail ?? {}, 'event.detail', found) as Record<string, unknown>;
    const actor = storableCopy(event.actor, 'event.actor', found) as string | null;
    // Nothing here could be rendered (an id the store cannot hold, say): the refusal is the answer.
    if (found.length === 0) throw error;
    const retry: NewEvent = {
      ...event,
      actor,
      detail: { ...detail, unstorable: { fields: found, refused: error.message } },
    };
    this.renderedWrite = true;
    return this.env.store.transition(id, from, fixed as RecordPatch, retry, guard);
  }
}

function hasKeys(object: object): boolean {
  for (const _ in object) return true;
  return false;
}
