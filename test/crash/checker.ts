// Compares the fake target's logs with the operation store after a lane of crash runs and returns every
// broken invariant as a sentence naming the operation, so a failure says what went wrong where.
import type { Completion, Lifecycle, OperationEvent, OperationStore } from '../../src/index.js';
import { type CrashOp, TIMING } from './actions.js';
import type { Effect, Target } from './target.js';

/** What one operation ended as, for the summary: `status/errorCode`, or why it has no record. */
export type Outcome = string;

export interface CheckResult {
  violations: string[];
  outcomes: Map<string, Outcome>;
  /** Operations whose record shows more than one attempt (a proven-absent retry). */
  retried: number;
  /** Records left in `requested` that no reconciler ever picked up (see reserve-grace.test.ts). */
  unswept: number;
}

const SETTLED_STATUSES = ['verified', 'failed', 'partial', 'no_op'];

/** Checks every invariant of section 6 over one lane's store and target. */
export async function checkLane(store: OperationStore, target: Target, ops: CrashOp[]): Promise<CheckResult> {
  const violations: string[] = [];
  const outcomes = new Map<string, Outcome>();
  const effects = target.effects();
  const reads = target.reads();
  const byKey = new Map<string, Effect[]>();
  for (const e of effects) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e]);
  const opKeys = new Set(ops.map((o) => o.key));
  let retried = 0;
  let unswept = 0;

  // Every effect that happened has a record, written before it (an `executing` event of that attempt).
  for (const e of effects) {
    if (!opKeys.has(e.key)) violations.push(`${e.key}: effect for a key the test never generated`);
  }

  for (const op of ops) {
    const bad = (what: string) => violations.push(`${op.key} (${op.kind}): ${what}`);
    const mine = byKey.get(op.key) ?? [];
    const record = await store.getByKey(op.key);
    if (!record) {
      if (mine.length > 0) bad(`${mine.length} effect(s) but no operation record`);
      outcomes.set(op.key, 'never reserved');
      continue;
    }
    const events = await store.events(record.id);
    const c: Completion | null = record.completion;
    outcomes.set(op.key, `${record.status ?? 'none'}/${c?.errorCode ?? '-'}`);
    if (record.attempt > 1) retried++;

    for (const e of mine) {
      const started = events.find((ev) => ev.type === 'executing' && ev.attempt === e.attempt);
      if (!started) bad(`effect of attempt ${e.attempt} has no executing event for that attempt`);
      else if (started.at > e.at) bad(`effect at ${e.at} precedes its executing event at ${started.at}`);
      if (e.attempt > record.attempt)
        bad(`effect of attempt ${e.attempt} beyond recorded attempt ${record.attempt}`);
    }
    // Each attempt executes at most once, and a not-safe-to-repeat effect happens at most once.
    const attempts = mine.map((e) => e.attempt);
    if (new Set(attempts).size !== attempts.length) bad(`one attempt executed twice: attempts ${attempts}`);
    if (op.kind === 'bump') {
      if (mine.length > 1) bad(`not-safe-to-repeat effect applied ${mine.length} times`);
      if (target.counter(op.key) > 1) bad(`counter is ${target.counter(op.key)}`);
    }
    if (mine.filter((e) => e.applied === 1).length > 1) bad('the provider applied the effect twice');

    violations.push(...eventViolations(op, events, record.lifecycle, record.status, record.attempt));

    // Every operation ends settled, `unknown` after its poll budget, or untouched in `requested`.
    const code = c?.errorCode;
    if (record.lifecycle === 'settled') {
      if (!record.status || !SETTLED_STATUSES.includes(record.status)) bad(`settled as ${record.status}`);
    } else if (record.lifecycle === 'timed_out') {
      const since = record.acceptedAt ?? record.executedAt ?? record.requestedAt;
      if (record.status !== 'unknown' || code !== 'poll_budget_exhausted')
        bad(`timed_out as ${outcomes.get(op.key)}`);
      if (Date.now() < since + TIMING.poll.maxDurationMs) bad('unknown before its poll budget ran out');
    } else if (record.lifecycle === 'requested') {
      // A crash right after reserve: a reconciler past the reserve grace settles it failed/not_executed and
      // leaves it re-runnable. A record nobody ever claimed counts as unswept, which the test requires to be 0.
      // Either way nothing may have executed.
      if (record.status === null && record.completion === null && record.attempt === 0) unswept++;
      else if (record.attempt !== 0 || record.status !== 'failed' || code !== 'not_executed') {
        bad(`left in requested as ${outcomes.get(op.key)}, attempt ${record.attempt}`);
      }
      if (mine.length > 0) bad('left in requested, yet the target saw an effect');
      if (events.some((e) => e.type === 'executing')) bad('left in requested after an executing event');
    } else {
      bad(
        `still open: lifecycle ${record.lifecycle}, status ${record.status}, next poll ${record.nextPollAt}`,
      );
    }

    // The outcome agrees with the target (this target has no faults besides the crashes themselves).
    const applied = mine.some((e) => e.applied === 1);
    if (record.status === 'failed' && code === 'effect_absent' && mine.length > 0) {
      bad('failed as effect_absent, yet the target applied it');
    }
    if (record.status === 'verified' && !applied) bad('verified, yet the target never applied it');
    if (
      record.status === 'failed' &&
      !['effect_absent', 'provider_failed', 'not_executed'].includes(code ?? '')
    ) {
      bad(`failed with unexpected code ${code}: ${c?.reason}`);
    }
    if (op.kind === 'job' && record.status === 'verified' && op.outcome !== 'succeeded')
      bad('failed job verified');
    if (op.kind === 'job' && code === 'provider_failed' && op.outcome !== 'failed') bad('good job failed');

    // Nothing is verified without an authoritative read after its last execute.
    if (record.status === 'verified') {
      const lastExec = events.filter((e) => e.type === 'executing').at(-1);
      const lastEffect = mine.at(-1);
      const after = Math.max(lastExec?.at ?? 0, lastEffect?.at ?? 0);
      if (!reads.some((r) => r.key === op.key && r.at >= after))
        bad('verified with no target read after execute');
      const observedAt = c?.observedAt ? Date.parse(c.observedAt) : Number.NaN;
      if (!(observedAt >= (record.executedAt ?? Number.POSITIVE_INFINITY))) {
        bad(`verified with observedAt ${c?.observedAt} not after executedAt ${record.executedAt}`);
      }
      if (
        op.kind === 'job' &&
        // A read that settles the operation is recorded in the settling write (detail.reading).
        !events.some(
          (e) =>
            lastExec &&
            e.seq > lastExec.seq &&
            (e.type === 'observed' || (e.type === 'settled' && e.detail?.reading !== undefined)),
        )
      ) {
        bad('accepted work verified with no read recorded after its executing event');
      }
    }
  }
  return { violations, outcomes, retried, unswept };
}

const RANK: Record<Lifecycle, number> = {
  requested: 0,
  awaiting_approval: 0,
  executing: 1,
  accepted: 2,
  running: 2,
  timed_out: 2,
  settled: 3,
};

/**
 * Status and attempt only move forward; nothing follows `settled`; the record matches its last event. The one way
 * back is a move to executing withdrawn before execute was called (its caller aborted while the move was written):
 * a `withdrawn` event right after that `executing` event returns to the lifecycle and attempt from before it.
 */
function eventViolations(
  op: CrashOp,
  events: OperationEvent[],
  lifecycle: Lifecycle,
  status: string | null,
  attempt: number,
): string[] {
  const out: string[] = [];
  const bad = (what: string) => out.push(`${op.key} (${op.kind}) events: ${what}`);
  if (events[0]?.type !== 'reserved') bad(`first event is ${events[0]?.type}`);
  let lastRank = 0;
  events.forEach((e, i) => {
    if (e.seq !== i + 1) bad(`seq ${e.seq} at position ${i + 1}`);
    const prev = events[i - 1];
    if (!prev) return;
    const withdrawn =
      e.type === 'withdrawn' &&
      prev.type === 'executing' &&
      e.to === prev.from &&
      e.attempt === (events[i - 2]?.attempt ?? 0);
    if (e.attempt < prev.attempt && !withdrawn)
      bad(`attempt went back from ${prev.attempt} to ${e.attempt} at seq ${e.seq}`);
    if (prev.to === 'settled') bad(`${e.type} at seq ${e.seq} follows settled`);
    if (e.to !== null) {
      const rank = RANK[e.to];
      // The only way back is a proven-absent retry (executing again) or a late read of timed-out work.
      const retried = e.to === 'executing' && e.type === 'executing' && e.attempt > prev.attempt;
      if (rank < lastRank && !retried && !withdrawn) {
        bad(`lifecycle went back to ${e.to} at seq ${e.seq} (${e.type})`);
      }
      if (withdrawn) lastRank = rank;
      else lastRank = e.to === 'executing' && e.type === 'executing' ? 1 : Math.max(lastRank, rank);
    }
  });
  const last = events.at(-1);
  if (last && (last.to !== lifecycle || last.status !== status || last.attempt !== attempt)) {
    bad(
      `record (${lifecycle}, ${status}, ${attempt}) differs from its last event (${last.to}, ${last.status}, ${last.attempt})`,
    );
  }
  return out;
}
