import { toRecordable } from '../canonical.js';
import type { AnyAction, Completion, RunContext } from '../contract/types.js';
import { isStoreMisuse } from '../store/records.js';
import type { NewEvent, OperationRecord, RecordPatch, ReserveStart } from '../store/types.js';
import { judgeBaseline } from './baseline.js';
import { type FollowMode, FollowUp, LAST_READ_MS, parkedDue, watchedUntil } from './follow.js';
import { isAccepted, isRejected } from './markers.js';
import { describeError, readBaseline } from './readback.js';
import { runUnrecorded } from './shadow.js';
import { NEVER_ABORTED, withDeadline } from './timeout.js';

export type { FollowMode } from './follow.js';
export type { DriveEnv } from './record-writer.js';

/**
 * Drives one operation record through the decision: baseline, execute, read back, settle.
 * Every store write is a compare-and-set on the lifecycle this drive last saw, so concurrent drivers
 * of the same record cannot both act: the loser re-reads and reports what the winner recorded.
 */
export class Drive extends FollowUp {
  /** Starts a reserved operation: baseline read, then execute. */
  start(): Promise<Completion> {
    // Most actions have neither a baseline nor an approval gate: they go straight on, without an async
    // frame (a promise and its turns) of their own.
    if (this.action.before || this.action.needsApproval) return this.startChecked();
    return this.run.signal.aborted ? this.abortedBeforeExecute() : this.execute();
  }

  private abortedBeforeExecute(): Promise<Completion> {
    return this.stayRequested({ status: 'failed', errorCode: 'aborted', reason: 'aborted before execute' });
  }

  private async startChecked(): Promise<Completion> {
    const { action } = this;
    if (action.before) {
      const read = () => readBaseline(this.env.clock, action, this.record.input, this.stepContext);
      const base = await (this.run.trace ? this.run.trace.baseline(this.record, read) : read());
      // In shadow mode the live tool runs whatever the baseline says: readback only watches.
      if (!base.ok && !this.shadow) {
        const code = base.code === 'aborted' ? 'aborted' : 'baseline_unavailable';
        return this.stayRequested({ status: 'failed', errorCode: code, reason: base.reason });
      }
      if (base.ok) this.baseline = base.value;
      if (base.ok && base.value !== null && !this.shadow) {
        const found = this.judgeBaseline(base.value);
        if (found) return found;
      }
    }
    if (this.run.signal.aborted) return this.abortedBeforeExecute();
    if (action.needsApproval && !this.shadow && (await this.needsReview())) return this.awaitApproval();
    return this.execute();
  }

  /** A reconciler found this record due: finish it without an agent, never re-executing unsafe work. */
  async reconcile(): Promise<Completion> {
    if (this.record.lifecycle !== 'requested') return this.advance('once');
    // Execute is only ever called after the record moves to executing, so nothing ran. Executing now, with no
    // agent waiting, would surprise; leave it re-runnable under the same key and say what happened.
    return this.stayRequested({
      status: 'failed',
      errorCode: 'not_executed',
      reason: 'the run that reserved this operation stopped before executing it; nothing was executed',
    });
  }

  private async needsReview(): Promise<boolean> {
    const events = await this.env.store.events(this.record.id);
    if (events.some((e) => e.type === 'approved')) return false;
    try {
      const { runId, scope, actor } = this.record;
      // Fail closed: only an explicit `false` lets the call run unreviewed; a policy answering anything else
      // (a truthy 1 or 'yes', an object, nothing at all) has not said the call is safe to run.
      // A policy that does not answer within verifyTimeoutMs (a remote policy service that hangs) has not decided
      // either: the call goes to a reviewer rather than holding the run, and its record, open.
      const ctx = { runId, scope, ...(actor ? { actor } : {}) };
      const policy = this.action.needsApproval;
      const answer = policy
        ? await withDeadline(
            this.env.clock,
            'needsApproval',
            this.action.verifyTimeoutMs,
            // A caller's abort is seen after the policy answers, where it stops the call before execute.
            NEVER_ABORTED,
            () => policy(this.record.input, ctx),
          )
        : false;
      return answer !== false;
    } catch {
      // Fail closed: a policy that cannot decide sends the call to a reviewer.
      return true;
    }
  }

  private awaitApproval(): Promise<Completion> {
    return this.park(
      {
        status: 'pending',
        errorCode: 'awaiting_approval',
        reason: 'a reviewer must approve this operation before it runs',
        evidence: { fingerprint: this.record.fingerprint, input: this.record.input },
        next: 'ask_user',
      },
      'awaiting_approval',
      null,
    );
  }

  /** Advances an open operation without ever re-executing unsafe work. */
  async advance(follow: FollowMode): Promise<Completion> {
    switch (this.record.lifecycle) {
      case 'requested':
        return this.resumedShadow() ? this.shadowNotExecuted() : this.start();
      case 'executing':
        return this.resolveInDoubt();
      case 'accepted':
      case 'running':
        // A waiting caller first waits for the due time the work was parked with (`pollAfter`). Only a waiting
        // caller: a reconciler (`once`, under a lease its last write gives back) reads and parks as always.
        return follow === 'wait'
          ? this.followAccepted('wait', parkedDue(this.record))
          : this.followAccepted('once');
      case 'timed_out':
        return this.followAccepted(follow === 'none' ? 'once' : follow);
      default:
        return this.current();
    }
  }

  /** A shadow record driven again (a poll), not by the agent's own call: readback must never run its tool. */
  private resumedShadow(): boolean {
    return this.shadow !== undefined && this.run.shadow === undefined;
  }

  // The agent's call ended without the live tool running (aborted, say) and was told so: running it now, with
  // nobody waiting, would be readback acting on its own. The record says what happened instead.
  private shadowNotExecuted(): Promise<Completion> {
    return this.stayRequested({
      status: 'failed',
      errorCode: 'not_executed',
      reason: 'a shadow call runs its live tool only within the agent’s own call; nothing was executed',
    });
  }

  private judgeBaseline(observed: unknown): Promise<Completion> | undefined {
    const decision = judgeBaseline(
      this.action,
      this.record,
      observed,
      this.stepContext(),
      this.env.clock.now(),
    );
    if (!decision) return undefined;
    return decision.settle ? this.finish(decision.outcome) : this.stayRequested(decision.outcome);
  }

  protected async execute(): Promise<Completion> {
    const { action, env } = this;
    // From the lifecycle this drive saw (with the attempt guard, as exact as allowing either): a single
    // lifecycle lets a store skip reading which one the row was in for the event's `from`.
    const before = this.record;
    const seen = before.lifecycle;
    let moved: boolean;
    try {
      const patch = executingPatch(action, env.clock.now(), this.record.attempt + 1);
      // Kept so freshness rules still have their baseline when a later poll or a restart reads back.
      if (this.baseline !== undefined) patch.baseline = toRecordable(this.baseline).value;
      moved = await this.move(
        seen === 'requested' || seen === 'executing' ? [seen] : ['requested', 'executing'],
        patch,
        { type: 'executing' },
        this.record.attempt,
      );
    } catch (error) {
      // Shadow never stands between the agent and its tool: a store failing here must not keep it from running.
      if (!this.shadow || isStoreMisuse(error)) throw error;
      return this.executeUnrecorded(error);
    }
    if (!moved) return this.superseded();
    // The caller may have aborted (or a reconciler begun stopping) while the move was written: nothing has run yet.
    const blocked = this.executeBlocked();
    if (blocked) return this.withdraw(before, blocked);
    return this.executeStep();
  }

  /**
   * The reserve that created the record also moved it to executing (a `ReserveStart` from `startingMove`, for an
   * action with nothing to do between the two): the move is told to the trace, and the step runs.
   */
  startMoved(): Promise<Completion> {
    this.run.trace?.transition('executing', 'requested', this.record, this.record.updatedAt);
    const blocked = this.executeBlocked();
    if (!blocked) return this.executeStep();
    // Back to the record as a reserve without the start leaves it.
    const reserved = { lifecycle: 'requested', attempt: 0, executedAt: null, inFlightUntil: null } as const;
    return this.withdraw({ ...reserved, requestedAt: this.record.requestedAt }, blocked);
  }

  /**
   * The caller aborted (`why`: or the reconciler driving this began stopping) while a move to executing was written,
   * by the reserve that started the record or by this drive: execute was never called, so the move is withdrawn. The
   * record goes back to what it held `before` (its lifecycle, attempt and in-flight window; a `withdrawn` event keeps
   * the move on the trail) and the call ends as the same stop found a moment earlier would have ended it: a first
   * attempt failed/aborted and re-runnable under the same key, a retry unknown/aborted and due again, not spent.
   */
  private withdraw(before: WithdrawnTo, why: 'aborted' | 'the reconciler stopped'): Promise<Completion> {
    const at = this.env.clock.now();
    const first = before.lifecycle === 'requested';
    const outcome = first
      ? this.outcome({
          status: 'failed',
          errorCode: 'aborted',
          reason: `${why} before execute`,
          attempt: 0,
          nothingExecuted: true,
        })
      : this.outcome({
          status: 'unknown',
          errorCode: 'aborted',
          reason: `${why} before the retry`,
          attempt: before.attempt,
        });
    // A retry was proven safe before its move: it is due again at once, for the next drive.
    const nextPollAt = first ? null : at;
    if (nextPollAt !== null) outcome.pollAfter = nextPollAt;
    const completion = this.form(outcome);
    const patch: RecordPatch = {
      lifecycle: before.lifecycle,
      status: outcome.status,
      completion,
      attempt: before.attempt,
      executedAt: before.executedAt,
      inFlightUntil: before.inFlightUntil,
      nextPollAt,
    };
    this.releaseLease(patch);
    const event = { type: 'withdrawn', detail: { errorCode: 'aborted' } };
    return this.move(['executing'], patch, event, this.record.attempt).then((ok) =>
      ok ? completion : this.superseded(),
    );
  }

  /** Runs the action's execute step on a record already moved to executing, and decides from what it returns. */
  private async executeStep(): Promise<Completion> {
    const { action, env } = this;
    let raw: unknown;
    const trace = this.run.trace;
    // The trace is told when the step starts and how it ended, around this await (no promise of its own).
    const started = trace ? trace.executeStarted(this.record) : 0;
    try {
      // A live tool under shadow runs as long as it always did: readback's deadline would turn a slow
      // success into an error the agent never used to see. Only the caller's own signal applies.
      raw = await (this.shadow
        ? action.execute(this.record.input, this.stepContext())
        : withDeadline(env.clock, 'execute', action.executeTimeoutMs, this.run.signal, (signal) =>
            action.execute(this.record.input, this.stepContext(signal)),
          ));
      trace?.executeReturned(this.record, started, raw);
      this.shadow?.returned(raw, this.record);
    } catch (error) {
      trace?.executeThrew(this.record, started, error);
      this.shadow?.threw(error, this.record);
      if (action.mode === 'optimistic') {
        this.pendingDetail = { error: describeError(error), ...this.shadowClaim() };
        return this.finish(
          { status: 'unknown', errorCode: 'transport_error', reason: describeError(error) },
          true,
        );
      }
      // The settlement window runs from when we gave up on the request, not from when it was sent.
      const ok = await this.move(
        ['executing'],
        { inFlightUntil: env.clock.now() + action.maxInFlightMs },
        { type: 'execute_failed', detail: { error: describeError(error), ...this.shadowClaim() } },
      );
      if (!ok) return this.superseded();
      return this.resolveInDoubt();
    }
    const recorded = toRecordable(isRejected(raw) || isAccepted(raw) ? (raw.raw ?? null) : raw);
    const detail: Record<string, unknown> = { raw: recorded.value };
    if (recorded.unusable) detail.rawUnusable = recorded.unusable;
    if (this.shadow) detail.shadowClaim = this.shadow.claimed;
    this.pendingDetail = detail;

    if (isRejected(raw)) {
      return this.finish({ status: 'failed', errorCode: raw.code, reason: raw.reason, next: 'repair' });
    }
    if (action.mode === 'optimistic') {
      return this.finish(
        { status: 'unknown', errorCode: 'unverifiable', reason: 'optimistic action: no verifier exists' },
        true,
      );
    }
    if (action.mode === 'accepted') {
      const ref = isAccepted(raw) ? toRecordable(raw.ref).value : null;
      const now = env.clock.now();
      const patch: RecordPatch = { lifecycle: 'accepted', acceptedAt: now, providerRef: ref, reads: 0 };
      // A run that waits keeps reconcilers off the work it follows; one that does not parks it right after.
      if (this.runWait) patch.nextPollAt = watchedUntil(action, now);
      const ok = await this.move(['executing'], patch, { type: 'accepted' });
      if (!ok) return this.superseded();
      return this.followAccepted(this.runWait ? 'wait' : 'none');
    }
    return this.verifyCommitted(false);
  }

  /** Whether `run` should wait within the poll budget; set by the runner. */
  runWait = true;

  /**
   * Shadow: the store failed before the live tool's run was recorded. The tool runs as it would without readback,
   * then the run is recorded if the store has come back (so a later read-back judges it, instead of a record that
   * says nothing ran); operators get an unknown completion either way.
   */
  private async executeUnrecorded(error: unknown): Promise<Completion> {
    const r = this.record;
    const now = this.env.clock.now();
    const ctx: RunContext = { runId: r.runId };
    if (this.run.actor !== undefined) ctx.actor = this.run.actor;
    const call = {
      target: r.target,
      operationId: r.id,
      idempotencyKey: r.idempotencyKey,
      ctx,
      scope: r.scope,
    };
    const completion = await runUnrecorded(
      this.action,
      r.input,
      { ...call, signal: this.run.signal, now, recordKept: true },
      this.shadow!,
      error,
    );
    const later = { ...completion, reason: `${completion.reason}; recorded afterwards, due for a read-back` };
    const recorded = await this.move(
      [r.lifecycle],
      {
        lifecycle: 'executing',
        attempt: r.attempt + 1,
        executedAt: now,
        inFlightUntil: null,
        nextPollAt: now,
        // The claim a later read-back judges (a resumed shadow drive takes it from the stored completion).
        completion: this.shadow!.mark(later),
      },
      {
        type: 'executing',
        detail: { unrecordedRun: describeError(error), shadowClaim: this.shadow!.claimed },
      },
      r.attempt,
    ).catch(() => false);
    return recorded ? later : completion;
  }

  /** Execute threw or timed out, or a crash left the record mid-flight: read back before anything else. */
  private async resolveInDoubt(): Promise<Completion> {
    if (this.action.mode === 'optimistic') {
      return this.finish(
        { status: 'unknown', errorCode: 'unverifiable', reason: 'no verifier exists' },
        true,
      );
    }
    if (this.action.mode === 'committed') return this.verifyCommitted(true);
    const reading = await this.read('in_doubt');
    if (reading.kind === 'absent') return this.judgeAbsence(reading);
    if (reading.kind === 'error') return this.unresolved(reading);
    const patch: RecordPatch = { lifecycle: 'accepted', acceptedAt: this.record.acceptedAt ?? reading.at };
    if (this.runWait) patch.nextPollAt = watchedUntil(this.action, reading.at);
    const ok = await this.move(['executing'], patch, { type: 'accepted', detail: { via: 'read_back' } });
    if (!ok) return this.superseded();
    return (await this.judgeAccepted(reading)) ?? this.followAccepted(this.runWait ? 'wait' : 'none');
  }
}

/** What a withdrawn move to executing restores: the record's fields as they were before it. */
type WithdrawnTo = Pick<
  OperationRecord,
  'lifecycle' | 'attempt' | 'executedAt' | 'inFlightUntil' | 'requestedAt'
>;

/** The move to executing for this attempt: when it began, and when a read-back is due if this process dies. */
export function executingPatch(action: AnyAction, now: number, attempt: number): RecordPatch {
  return {
    lifecycle: 'executing',
    attempt,
    executedAt: now,
    inFlightUntil: null,
    // If this process dies mid-execute, the record becomes due for a read-back after this time: once a request
    // sent then must have landed, and not before a live run's verification (its settle window) has ended.
    nextPollAt: now + action.executeTimeoutMs + Math.max(action.maxInFlightMs, verifyWindowMs(action)),
  };
}

/** How long a committed action's verification may take after execute returns: a read, the settle window, a last read. */
function verifyWindowMs(action: AnyAction): number {
  return action.mode === 'committed' ? action.verifyTimeoutMs + action.settle.timeoutMs + LAST_READ_MS : 0;
}

/**
 * The first move to executing as a reserve can make it (`ReserveStart`), for a call with nothing to do between
 * reserving and executing: no baseline read, no approval gate, not shadow (whose tool must run even when the
 * store fails). Undefined otherwise; the drive then moves the record itself, as it does when a store ignores it.
 */
export function startingMove(
  action: AnyAction,
  now: number,
  actor: string | null,
  shadow: boolean,
): ReserveStart | undefined {
  if (shadow || action.before || action.needsApproval) return undefined;
  const patch = executingPatch(action, now, 1);
  patch.updatedAt = now;
  const event: NewEvent = {
    type: 'executing',
    at: now,
    from: 'requested',
    to: 'executing',
    status: null,
    actor,
    attempt: 1,
  };
  return { patch, event };
}
