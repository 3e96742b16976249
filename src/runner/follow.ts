// The read-back half of a drive: verifying a committed action (with its settle window), judging absence after an
// ambiguous attempt, and following accepted work within its poll budget. `Drive` adds how an operation starts
// and executes; `execute` is what a proven absence may run again.
import type { AnyAction, Completion, StepContext } from '../contract/types.js';
import type { Lifecycle, OperationRecord, RecordPatch } from '../store/types.js';
import type { ReadPhase } from '../trace/events.js';
import { pollDelay } from './backoff.js';
import type { Outcome } from './outcome.js';
import { type Reading, readOnce } from './readback.js';
import { RecordWriter } from './record-writer.js';
import { withLazySignal } from './step-context.js';
import type { LazySignal } from './timeout.js';
import {
  isSettledVerdict,
  mismatchFacts,
  seenFacts,
  settledByVerdict,
  staleReason,
  summarizeReading,
  tiedToOperation,
} from './verdict.js';

/**
 * The step deadline of a read that starts less than this before the end of a poll budget or settle window (or
 * after it), when `verifyTimeoutMs` is longer: the slack by which a waiting run may outlast either. Reads that
 * start earlier are cut at the end itself, so a hung verifier cannot hold the caller for a whole step deadline.
 */
export const LAST_READ_MS = 1_000;

/**
 * The `nextPollAt` a drive that waits on accepted work writes at `at`: it reads again within `poll.maxDelayMs` and
 * writes within `verifyTimeoutMs` of that, so until then the record is not due and no reconciler claims (and
 * polls) what a live run is still following. The same again is slack for a loaded process, in proportion to the
 * action's own timings; if the process dies, the record is due after that.
 */
export function watchedUntil(action: AnyAction, at: number): number {
  return at + 2 * (action.poll.maxDelayMs + action.verifyTimeoutMs);
}

/** How an accepted operation is followed: wait within the budget, read once now, or not at all. */
export type FollowMode = 'wait' | 'once' | 'none';

/**
 * When parked accepted work is next due: its `nextPollAt`, for an accepted or running record whose stored
 * completion is the `pending` one parked with that due time (it carries `pollAfter`); undefined otherwise (a
 * record left mid-drive by a crash, say, whose `nextPollAt` is a reconciler's deadline, not a poll schedule).
 */
export function parkedDue(record: OperationRecord): number | undefined {
  if (record.lifecycle !== 'accepted' && record.lifecycle !== 'running') return undefined;
  const c = record.completion;
  if (record.nextPollAt === null || c?.status !== 'pending' || c.pollAfter === undefined) return undefined;
  return record.nextPollAt;
}

/** Reads back and decides; the subclass executes. */
export abstract class FollowUp extends RecordWriter {
  /** The baseline read before execute, when the action has `before` (its steps see it as `ctx.before`). */
  protected baseline: unknown;

  /** Runs the action's execute step (again, after a proven absence, when it is safe to repeat). */
  protected abstract execute(): Promise<Completion>;

  protected verifyCommitted(inDoubt: boolean): Promise<Completion> {
    const deadline = this.env.clock.now() + this.action.settle.timeoutMs;
    const phase = inDoubt ? 'in_doubt' : 'verify';
    // The usual read decides at once: one `then`, and the settle-window loop only when it must re-read.
    return this.read(phase).then((reading) =>
      decisive(reading) ? this.concludeRead(reading, inDoubt) : this.rereadWithin(deadline, phase, reading),
    );
  }

  /** A lagging read may catch up: re-read every `settle.intervalMs` until one decides or the window ends. */
  protected async rereadWithin(deadline: number, phase: ReadPhase, first: Reading): Promise<Completion> {
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
      const ms = this.deadlineBy(deadline);
      reading = await this.read(phase, ms);
      if (this.cutShort(reading, ms)) {
        // It decided nothing: the write may have landed just then, so the earlier lagging read cannot fail it.
        return this.unresolved({
          at: reading.at,
          code: 'verifier_timeout',
          reason: `the last re-read did not return before the settle window ended (${reading.reason})`,
        });
      }
      if (decisive(reading)) break;
      step = action.settle.intervalMs;
    }
    return this.concludeRead(reading, phase === 'in_doubt');
  }

  /** What the last read of a committed action says: settled, still unknown, or absent (judged by `inDoubt`). */
  protected concludeRead(reading: Reading, inDoubt: boolean): Promise<Completion> {
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
  protected async judgeAbsence(reading: Reading, seen: Partial<Outcome> = {}): Promise<Completion> {
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
      // A caller that stopped waiting, or a reconciler that is stopping, must not set off a new attempt: the retry
      // is left to the next drive.
      const blocked = this.executeBlocked();
      if (blocked) {
        // The read decided (absence proven): only the retry is left, due at once for the next drive rather than
        // after an undecided read's backoff (up to an hour).
        return this.park(
          { ...seen, status: 'unknown', errorCode: 'aborted', reason: `${blocked} before the retry` },
          this.record.lifecycle,
          reading.at,
        );
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

  /**
   * Follows accepted work. `dueAt` is the due time the record was parked with (see `parkedDue`): a waiting
   * drive resumed on parked work waits until then before its first read, not a whole new backoff step.
   */
  protected async followAccepted(follow: FollowMode, dueAt?: number): Promise<Completion> {
    const { action, env } = this;
    if (follow === 'none') return this.parkPending();
    const end = this.budgetEnd();
    // With the budget already spent (a poll of timed-out work, or a reconciler reaching work at or after the
    // budget's end) the read still happens once: a late terminal state settles the operation honestly instead
    // of being ignored. That one read gets the full step deadline, so a slow verifier can still settle it.
    const spentBefore = this.budgetSpent();
    // Until this drive reads, an abort changes nothing: the caller gets the parked completion as stored, and
    // the schedule stays as it was rather than being pushed back by a caller who stopped waiting.
    let parked = dueAt !== undefined ? this.record.completion : null;
    // Resumed on parked work, a waiting drive first keeps reconcilers off it until its own first read is written
    // (see `watchedUntil`); a caller who then stops waiting gives the due time back as it was.
    let watched = false;
    if (follow === 'wait' && parked && dueAt !== undefined && !this.budgetSpent()) {
      const until = watchedUntil(action, Math.max(env.clock.now(), dueAt));
      if (!(await this.move([this.record.lifecycle], { nextPollAt: until }, { type: 'waiting' }))) {
        return this.superseded();
      }
      watched = true;
    }
    const stop = (): Promise<Completion> => {
      if (!parked) return this.parkPending();
      if (!watched) return Promise.resolve(parked);
      const stored = parked;
      return this.move(
        [this.record.lifecycle],
        { nextPollAt: dueAt ?? null },
        { type: 'waiting_ended' },
      ).then((ok) => (ok ? stored : this.superseded()));
    };
    for (;;) {
      // Wait before each read while budget remains, never past the budget's end.
      if (follow === 'wait' && !this.budgetSpent()) {
        const step =
          parked && dueAt !== undefined
            ? dueAt - env.clock.now()
            : pollDelay(action.poll, this.record.reads, env.random);
        const delay = Math.min(end - env.clock.now(), step);
        try {
          await env.clock.sleep(Math.max(0, delay), this.run.signal);
        } catch {
          return stop();
        }
      }
      // An aborted caller reads nothing more: a read it no longer waits for would still spend the budget.
      if (this.run.signal.aborted) return stop();
      parked = null;
      // A read that starts within the budget ends by its end (or LAST_READ_MS after the read starts).
      const ms = spentBefore ? action.verifyTimeoutMs : this.deadlineBy(end);
      const reading = await this.read('poll', ms);
      const done = await this.judgeAccepted(reading, follow === 'wait');
      if (done) return done;
      if (this.budgetSpent()) return this.budgetExhausted(this.cutShort(reading, ms));
      if (follow === 'once') return this.parkPending(reading);
    }
  }

  /**
   * Records one poll read; resolves to a completion when it ends the operation, else undefined. `waiting`: this
   * drive goes on to read again (see `watchedUntil`).
   */
  protected async judgeAccepted(reading: Reading, waiting = false): Promise<Completion | undefined> {
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
    const patch: RecordPatch = { lifecycle, reads: this.record.reads + 1, lastObservedAt: reading.at };
    if (waiting) patch.nextPollAt = watchedUntil(this.action, reading.at);
    const ok = await this.move(['accepted', 'running', 'timed_out'], patch, {
      type: 'observed',
      detail: summarizeReading(reading),
    });
    return ok ? undefined : this.superseded();
  }

  /**
   * How a poll read ends the operation, or undefined when it does not: not finished, not visible yet,
   * unreadable this time, or a stale read of finished work that may catch up within the budget.
   */
  protected endingOf(reading: Reading): (() => Promise<Completion>) | undefined {
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

  protected read(phase: ReadPhase, ms = this.action.verifyTimeoutMs): Promise<Reading> {
    const { env, action, record } = this;
    const trace = this.run.trace;
    if (!trace) return readOnce(env.clock, action, record.input, this.stepContext, record.target, ms);
    const started = trace.readStarted();
    return readOnce(env.clock, action, record.input, this.stepContext, record.target, ms, (reading) =>
      trace.observed(phase, record, started, reading),
    );
  }

  /** The step deadline of a read that should end by `end`: cut there, but never below LAST_READ_MS. */
  protected deadlineBy(end: number): number {
    return Math.min(this.action.verifyTimeoutMs, Math.max(end - this.env.clock.now(), LAST_READ_MS));
  }

  /** Whether a read timed out only because its deadline was cut short of `verifyTimeoutMs`. */
  protected cutShort(reading: Reading, ms: number): reading is Extract<Reading, { kind: 'error' }> {
    return (
      reading.kind === 'error' && reading.code === 'verifier_timeout' && ms < this.action.verifyTimeoutMs
    );
  }

  /** When the poll budget ends: `maxDurationMs` after the work was accepted. */
  protected budgetEnd(): number {
    return (this.record.acceptedAt ?? this.record.requestedAt) + this.action.poll.maxDurationMs;
  }

  protected budgetSpent(): boolean {
    return this.record.reads >= this.action.poll.maxReads || this.env.clock.now() >= this.budgetEnd();
  }

  protected budgetExhausted(lastReadCut = false): Promise<Completion> {
    const { poll } = this.action;
    // A read cut short by the budget's end decided nothing: it leaves the work unknown, never failed.
    const cut = lastReadCut ? '; the last read did not return in time, before the budget ended' : '';
    return this.park(
      {
        status: 'unknown',
        errorCode: 'poll_budget_exhausted',
        reason: `no terminal state after ${this.record.reads} reads within ${poll.maxDurationMs} ms${cut}`,
        ...(this.record.lastObservedAt ? { observedAt: this.record.lastObservedAt } : {}),
      },
      'timed_out',
      null,
    );
  }

  protected parkPending(reading?: Reading): Promise<Completion> {
    const { poll } = this.action;
    const now = this.env.clock.now();
    // Never due after the budget ends: the read then is the last one, and an unfinished job turns `unknown`
    // on time (a longer backoff step would otherwise carry it past the budget, and past a lease).
    const budgetEnd = this.budgetEnd();
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
   * the step's AbortController is built only if used (see `withLazySignal`); otherwise it is the run's signal.
   */
  protected stepContext = (signal?: LazySignal): StepContext => {
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
        : withLazySignal(
            {
              runId: r.runId,
              scope: r.scope,
              operationId: r.id,
              idempotencyKey: r.idempotencyKey,
              attempt: r.attempt,
              startedAt,
            },
            signal,
          );
    if (r.actor) ctx.actor = r.actor;
    if (this.action.before) ctx.before = this.baseline !== undefined ? this.baseline : r.baseline;
    return ctx;
  };
}

/** A read that ends the settle window: an error, or an observation that settles (pass, wrong scope or target). */
function decisive(reading: Reading): boolean {
  return reading.kind === 'error' || (reading.kind === 'observed' && isSettledVerdict(reading));
}
