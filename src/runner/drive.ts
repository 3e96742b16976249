import { toRecordable } from '../canonical.js';
import type { Completion, RunContext, StepContext } from '../contract/types.js';
import { isStoreMisuse } from '../store/records.js';
import type { Lifecycle } from '../store/types.js';
import type { ReadPhase } from '../trace/events.js';
import { pollDelay } from './backoff.js';
import { judgeBaseline } from './baseline.js';
import { isAccepted, isRejected } from './markers.js';
import type { Outcome } from './outcome.js';
import { describeError, type Reading, readBaseline, readOnce } from './readback.js';
import { RecordWriter } from './record-writer.js';
import { runUnrecorded } from './shadow.js';
import { withDeadline } from './timeout.js';
import {
  isSettledVerdict,
  mismatchFacts,
  seenFacts,
  settledByVerdict,
  staleReason,
  summarizeReading,
  tiedToOperation,
} from './verdict.js';

export type { DriveEnv } from './record-writer.js';

/** How an accepted operation is followed: wait within the budget, read once now, or not at all. */
export type FollowMode = 'wait' | 'once' | 'none';

/**
 * Drives one operation record through the decision: baseline, execute, read back, settle.
 * Every store write is a compare-and-set on the lifecycle this drive last saw, so concurrent drivers
 * of the same record cannot both act: the loser re-reads and reports what the winner recorded.
 */
export class Drive extends RecordWriter {
  private baseline: unknown;

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
      return (
        (await this.action.needsApproval?.(this.record.input, {
          runId,
          scope,
          ...(actor ? { actor } : {}),
        })) === true
      );
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

  private async execute(): Promise<Completion> {
    const { action, env } = this;
    const now = env.clock.now();
    const attempt = this.record.attempt + 1;
    // From the lifecycle this drive saw (with the attempt guard, as exact as allowing either): a single
    // lifecycle lets a store skip reading which one the row was in for the event's `from`.
    const seen = this.record.lifecycle;
    let moved: boolean;
    try {
      moved = await this.move(
        seen === 'requested' || seen === 'executing' ? [seen] : ['requested', 'executing'],
        {
          lifecycle: 'executing',
          attempt,
          executedAt: now,
          inFlightUntil: null,
          // If this process dies mid-execute, the record becomes due for a read-back after this time.
          nextPollAt: now + action.executeTimeoutMs + action.maxInFlightMs,
          // Kept so freshness rules still have their baseline when a later poll or a restart reads back.
          ...(this.baseline !== undefined ? { baseline: toRecordable(this.baseline).value } : {}),
        },
        { type: 'executing' },
        this.record.attempt,
      );
    } catch (error) {
      // Shadow never stands between the agent and its tool: a store failing here must not keep it from running.
      if (!this.shadow || isStoreMisuse(error)) throw error;
      return this.executeUnrecorded(error);
    }
    if (!moved) return this.superseded();

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
      const ok = await this.move(
        ['executing'],
        { lifecycle: 'accepted', acceptedAt: env.clock.now(), providerRef: ref, reads: 0 },
        { type: 'accepted' },
      );
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
    const ok = await this.move(
      ['executing'],
      { lifecycle: 'accepted', acceptedAt: this.record.acceptedAt ?? reading.at },
      { type: 'accepted', detail: { via: 'read_back' } },
    );
    if (!ok) return this.superseded();
    return (await this.judgeAccepted(reading)) ?? this.followAccepted(this.runWait ? 'wait' : 'none');
  }

  private verifyCommitted(inDoubt: boolean): Promise<Completion> {
    const deadline = this.env.clock.now() + this.action.settle.timeoutMs;
    const phase = inDoubt ? 'in_doubt' : 'verify';
    // The usual read decides at once: one `then`, and the settle-window loop only when it must re-read.
    return this.read(phase).then((reading) =>
      decisive(reading) ? this.concludeRead(reading, inDoubt) : this.rereadWithin(deadline, phase, reading),
    );
  }

  /** A lagging read may catch up: re-read every `settle.intervalMs` until one decides or the window ends. */
  private async rereadWithin(deadline: number, phase: ReadPhase, first: Reading): Promise<Completion> {
    const { action, env } = this;
    let reading = first;
    // A window shorter than one interval still gets its re-read, at its end: without it a write that lands
    // within the window would be judged on the first read alone, and fail.
    let step = Math.min(action.settle.intervalMs, deadline - env.clock.now());
    while (step > 0 && env.clock.now() + step <= deadline) {
      try {
        await env.clock.sleep(step, this.run.signal);
      } catch {
        // Stopped before the window ended: the lag could still resolve, so this read decides nothing.
        return this.unresolved({
          at: env.clock.now(),
          code: 'aborted',
          reason: 'aborted before the settle window ended',
        });
      }
      reading = await this.read(phase);
      if (decisive(reading)) break;
      step = action.settle.intervalMs;
    }
    return this.concludeRead(reading, phase === 'in_doubt');
  }

  /** What the last read of a committed action says: settled, still unknown, or absent (judged by `inDoubt`). */
  private concludeRead(reading: Reading, inDoubt: boolean): Promise<Completion> {
    if (reading.kind === 'error') return this.unresolved(reading);
    if (reading.kind === 'absent') {
      return inDoubt ? this.judgeAbsence(reading) : this.mismatch(reading, 'the target was not found');
    }
    const evaluation = reading.evaluation!;
    const settled = settledByVerdict(evaluation, reading.at);
    // Final: a wrong target settles as unknown, which no later read of the same verifier would change.
    if (settled) return this.finish(settled, true);
    const seen = seenFacts(evaluation, reading.at);
    if (evaluation.verdict === 'stale') {
      return this.unresolved({ at: reading.at, code: 'stale_read', reason: staleReason(seen.checks) }, seen);
    }
    // After an ambiguous attempt a mismatch usually means the write is not visible yet; but a record a rule
    // ties to this very operation shows it landed, with other values: waiting or executing again cannot help.
    if (inDoubt && !(evaluation.fresh === true && tiedToOperation(evaluation.checks))) {
      return this.judgeAbsence(reading, seen);
    }
    const facts = mismatchFacts(evaluation, reading.at);
    return this.mismatch(reading, facts.reason, facts);
  }

  /** The effect is not visible after an ambiguous attempt: unknown inside the window, proven absent after it. */
  private async judgeAbsence(reading: Reading, seen: Partial<Outcome> = {}): Promise<Completion> {
    const { action } = this;
    // Without a recorded end (a crash mid-execute), assume the attempt ran to its execute timeout.
    const windowEnd =
      this.record.inFlightUntil ??
      (this.record.executedAt ?? this.record.requestedAt) + action.executeTimeoutMs + action.maxInFlightMs;
    if (reading.at < windowEnd) {
      return this.park(
        {
          ...seen,
          status: 'unknown',
          errorCode: 'in_flight',
          reason: `the request may still land until ${new Date(windowEnd).toISOString()}; the effect is not visible yet`,
        },
        'executing',
        windowEnd,
      );
    }
    // A shadow run never repeats the live tool's call: that would change what the tool does.
    if (action.safeToRepeat === true && !this.shadow && this.record.attempt <= this.env.retryBudget) {
      // A caller that stopped waiting must not set off a new attempt: the retry is left to the next drive.
      if (this.run.signal.aborted) {
        return this.unresolved({ at: reading.at, code: 'aborted', reason: 'aborted before the retry' }, seen);
      }
      this.pendingDetail = { ...this.pendingDetail, retry: 'absence proven after the settlement window' };
      return this.execute();
    }
    return this.finish({
      ...seen,
      observedAt: reading.at,
      status: 'failed',
      errorCode: 'effect_absent',
      reason: 'the request did not land within the settlement window',
      next: 'ask_user',
    });
  }

  private async followAccepted(follow: FollowMode): Promise<Completion> {
    const { action, env } = this;
    if (follow === 'none') return this.parkPending();
    for (;;) {
      // Wait before each read while budget remains. With the budget already spent (a poll of timed-out work,
      // or a reconciler reaching work nobody polled in time) the read still happens once: a late terminal
      // state settles the operation honestly instead of being ignored.
      if (follow === 'wait' && !this.budgetSpent()) {
        const remaining =
          (this.record.acceptedAt ?? env.clock.now()) + action.poll.maxDurationMs - env.clock.now();
        const delay = Math.min(remaining, pollDelay(action.poll, this.record.reads, env.random));
        try {
          await env.clock.sleep(Math.max(0, delay), this.run.signal);
        } catch {
          return this.parkPending();
        }
      }
      // An aborted caller reads nothing more: a read it no longer waits for would still spend the budget.
      if (this.run.signal.aborted) return this.parkPending();
      const reading = await this.read('poll');
      const done = await this.judgeAccepted(reading);
      if (done) return done;
      if (this.budgetSpent()) return this.budgetExhausted();
      if (follow === 'once') return this.parkPending(reading);
    }
  }

  /** Records one poll read; resolves to a completion when it ends the operation, else undefined. */
  private async judgeAccepted(reading: Reading): Promise<Completion | undefined> {
    const end = this.endingOf(reading);
    if (end) {
      // The read that ends the operation is recorded by the settling write itself (its count, time and
      // summary), so a settled job costs one store write, not an `observed` write followed by a `settled` one.
      this.pendingPatch = { reads: this.record.reads + 1, lastObservedAt: reading.at };
      this.pendingDetail = { ...this.pendingDetail, reading: summarizeReading(reading) };
      return end();
    }
    const lifecycle: Lifecycle =
      reading.kind === 'observed' && reading.terminal === 'running' ? 'running' : this.openLifecycle();
    const ok = await this.move(
      ['accepted', 'running', 'timed_out'],
      { lifecycle, reads: this.record.reads + 1, lastObservedAt: reading.at },
      { type: 'observed', detail: summarizeReading(reading) },
    );
    return ok ? undefined : this.superseded();
  }

  /**
   * How a poll read ends the operation, or undefined when it does not: not finished, not visible yet,
   * unreadable this time, or a stale read of finished work that may catch up within the budget.
   */
  private endingOf(reading: Reading): (() => Promise<Completion>) | undefined {
    if (reading.kind !== 'observed' || reading.terminal === 'running') return undefined;
    if (reading.terminal === 'failed') {
      // A batch job that failed part way: the units read back say what did apply. Some but not all is partial
      // (the provider's failure stays the code); otherwise the failure stands, with the units when there are any.
      const batch = reading.evaluation?.units ? reading.evaluation : undefined;
      const units = batch?.units;
      return () =>
        this.finish({
          status: units && units.passed > 0 && units.failed > 0 ? 'partial' : 'failed',
          errorCode: 'provider_failed',
          reason: units
            ? `the provider reports the work failed; ${units.passed} of ${units.required} units applied`
            : 'the provider reports the work failed',
          observedAt: reading.at,
          ...(batch ? { units, checks: batch.checks, evidence: batch.evidence } : {}),
        });
    }
    const evaluation = reading.evaluation!;
    const settled = settledByVerdict(evaluation, reading.at);
    if (settled) return () => this.finish(settled, true);
    if (evaluation.verdict === 'stale') return undefined;
    const facts = mismatchFacts(evaluation, reading.at);
    return () => this.mismatch(reading, facts.reason, facts);
  }

  private read(phase: ReadPhase): Promise<Reading> {
    const { env, action, record } = this;
    const trace = this.run.trace;
    if (!trace) return readOnce(env.clock, action, record.input, this.stepContext, record.target);
    const started = trace.readStarted();
    return readOnce(env.clock, action, record.input, this.stepContext, record.target, (reading) =>
      trace.observed(phase, record, started, reading),
    );
  }

  private budgetSpent(): boolean {
    const { poll } = this.action;
    const started = this.record.acceptedAt ?? this.record.requestedAt;
    return this.record.reads >= poll.maxReads || this.env.clock.now() >= started + poll.maxDurationMs;
  }

  private budgetExhausted(): Promise<Completion> {
    const { poll } = this.action;
    return this.park(
      {
        status: 'unknown',
        errorCode: 'poll_budget_exhausted',
        reason: `no terminal state after ${this.record.reads} reads within ${poll.maxDurationMs} ms`,
        ...(this.record.lastObservedAt ? { observedAt: this.record.lastObservedAt } : {}),
      },
      'timed_out',
      null,
    );
  }

  private parkPending(reading?: Reading): Promise<Completion> {
    const { poll } = this.action;
    const now = this.env.clock.now();
    // Never due after the budget ends: the read then is the last one, and an unfinished job turns `unknown`
    // on time (a longer backoff step would otherwise carry it past the budget, and past a lease).
    const budgetEnd = (this.record.acceptedAt ?? this.record.requestedAt) + poll.maxDurationMs;
    const next = Math.max(
      now,
      Math.min(now + pollDelay(poll, this.record.reads, this.env.random), budgetEnd),
    );
    const lastError = reading?.kind === 'error' ? { reason: reading.reason } : {};
    return this.park(
      {
        status: 'pending',
        errorCode: 'in_progress',
        ...lastError,
        ...(reading ? { observedAt: reading.at } : {}),
      },
      this.openLifecycle(),
      next,
    );
  }

  /**
   * The context for one step. Given a lazy `signal` (a step under a deadline), `ctx.signal` is a getter so
   * the step's AbortController is built only if used; otherwise it is the run's signal as a plain field,
   * because a literal with a getter costs several times more to build and most contexts need none.
   */
  private stepContext = (signal?: () => AbortSignal): StepContext => {
    const r = this.record;
    const startedAt = new Date(r.executedAt ?? r.requestedAt);
    const ctx: StepContext =
      signal === undefined
        ? {
            runId: r.runId,
            scope: r.scope,
            signal: this.run.signal,
            operationId: r.id,
            idempotencyKey: r.idempotencyKey,
            attempt: r.attempt,
            startedAt,
          }
        : {
            runId: r.runId,
            scope: r.scope,
            get signal() {
              return signal();
            },
            operationId: r.id,
            idempotencyKey: r.idempotencyKey,
            attempt: r.attempt,
            startedAt,
          };
    if (r.actor) ctx.actor = r.actor;
    if (this.action.before) ctx.before = this.baseline !== undefined ? this.baseline : r.baseline;
    return ctx;
  };
}

/** A read that ends the settle window: an error, or an observation that settles (pass, wrong scope or target). */
function decisive(reading: Reading): boolean {
  return reading.kind === 'error' || (reading.kind === 'observed' && isSettledVerdict(reading));
}
