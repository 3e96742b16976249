import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';
import { callsTo, ctx, setup } from './support.js';

/** A queued job that never finishes, whose verifier ignores abort signals (as many database reads do). */
function stuckJob(maxReads = 3) {
  const clock = new FakeClock();
  const store = memoryStore();
  const reads: number[] = [];
  const action = defineAction({
    name: 'export',
    description: 'Queues an export.',
    postcondition: 'The export finished.',
    mode: 'accepted',
    input: anyInput as never,
    target: () => 'export:1',
    execute: async () => accepted('job-1'),
    observe: async () => {
      reads.push(clock.now());
      return { state: 'running' };
    },
    terminal: () => 'running',
    expect: () => ({ state: 'done' }),
    poll: { maxDurationMs: 60_000, maxReads, initialDelayMs: 1_000, maxDelayMs: 4_000, jitter: 0 },
  });
  const runner = createRunner({ store, clock, random: () => 0, actions: [action] });
  return { clock, store, reads, action, runner };
}

function aborted(): AbortSignal {
  const controller = new AbortController();
  controller.abort();
  return controller.signal;
}

describe('abort while polling accepted work', () => {
  it('an aborted poll() reads nothing and spends none of the read budget', async () => {
    const s = stuckJob(3);
    const c = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    for (let i = 0; i < 5; i++) {
      const p = await s.runner.poll(c.operationId, { signal: aborted() });
      expect(p.status).toBe('pending');
    }
    expect(s.reads).toEqual([]);
    const record = await s.store.get(c.operationId);
    expect(record).toMatchObject({ lifecycle: 'accepted', reads: 0 });

    // The budget is whole: a later poll (once due) still polls, and the job is not given up on by aborted calls.
    s.clock.advance((record?.nextPollAt ?? 0) - s.clock.now());
    const later = await s.runner.poll(c.operationId);
    expect(later.status).toBe('pending');
    expect(s.reads).toHaveLength(1);
  });

  it('an aborted poll() joined to a drive already following the operation returns at once', async () => {
    const s = stuckJob(5);
    const c = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    const started = s.clock.now();
    const following = s.runner.poll(c.operationId, { wait: true });
    const controller = new AbortController();
    const joined = s.runner.poll(c.operationId, { wait: true, signal: controller.signal });
    controller.abort();
    const p = await joined;
    // The caller stopped waiting before any poll delay passed; the other caller's drive goes on.
    expect(s.clock.now()).toBe(started);
    expect(p.status).toBe('pending');
    expect(p.operationId).toBe(c.operationId);
    const done = await following;
    expect(done).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
    expect(s.reads).toHaveLength(5);
  });

  it('an aborted run() joined to the same call in flight returns at once', async () => {
    const s = stuckJob(5);
    const started = s.clock.now();
    const first = s.runner.run(s.action, {}, { runId: 'r' });
    const controller = new AbortController();
    const second = s.runner.run(s.action, {}, { runId: 'r', signal: controller.signal });
    await Promise.resolve();
    controller.abort();
    const c = await second;
    expect(s.clock.now()).toBe(started);
    expect(c.status).not.toBe('verified');
    expect(['pending', 'unknown']).toContain(c.status);
    expect((await first).status).toBe('unknown');
  });
});

describe('the one retry budget and abort', () => {
  it('an aborted poll() never re-executes, even once absence is proven', async () => {
    const { hd, runner } = setup();
    hd.ledger.faults.failNextWrite = true;
    const input = { orderId: '42', amountCents: 1999 };
    const c = await runner.run(hd.actions.refundOrder, input, ctx);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'in_flight' });
    hd.clock.advance(hd.actions.refundOrder.maxInFlightMs + 1);

    const stopped = await runner.poll(c.operationId, { signal: aborted() });
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(hd.ledger.entries()).toEqual([]);
    expect(stopped).toMatchObject({ status: 'unknown', errorCode: 'aborted', nextAllowedAction: 'poll' });
    expect(await runner.store.get(c.operationId)).toMatchObject({ lifecycle: 'executing', attempt: 1 });

    // The budget's one retry is still there for a poll that is not aborted.
    const later = await runner.poll(c.operationId);
    expect(later).toMatchObject({ status: 'verified', attempt: 2 });
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(2);
    expect(hd.ledger.entries()).toHaveLength(1);
  });

  it('a request lost every time executes at most 1 + retryBudget times across run, poll and reconcile', async () => {
    const { hd, runner } = setup();
    const input = { orderId: '42', amountCents: 1999 };
    hd.ledger.faults.failNextWrite = true;
    const c = await runner.run(hd.actions.refundOrder, input, ctx);
    for (let i = 0; i < 6; i++) {
      hd.ledger.faults.failNextWrite = true;
      hd.clock.advance(hd.actions.refundOrder.maxInFlightMs + hd.actions.refundOrder.executeTimeoutMs);
      if (i % 2 === 0) await runner.poll(c.operationId);
      else await runner.reconcile({ once: true });
    }
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(2);
    const end = await runner.poll(c.operationId);
    expect(end).toMatchObject({ status: 'failed', errorCode: 'effect_absent', attempt: 2 });
    // The same call again returns the settled outcome: a new call under the key is no new budget.
    expect(await runner.run(hd.actions.refundOrder, input, ctx)).toMatchObject({ status: 'failed' });
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(2);
  });

  it('the same idempotency key with a different input is refused, naming the key and executing nothing', async () => {
    const { hd, runner } = setup();
    const key = { ...ctx, idempotencyKey: 'refund-42' };
    const first = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, key);
    expect(first.status).toBe('verified');
    const other = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 2999 }, key);
    expect(other).toMatchObject({ status: 'failed', errorCode: 'idempotency_conflict', attempt: 0 });
    expect(other.reason).toContain('refund-42');
    expect(other.reason).toContain(first.operationId);
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(hd.ledger.refunded('42')).toBe(1999);
  });
});

describe('poll timing on the injected clock', () => {
  it('never reads more than maxReads nor past maxDurationMs, nor sooner than the declared backoff', async () => {
    const s = stuckJob(50);
    const start = s.clock.now();
    const c = await s.runner.run(s.action, {}, { runId: 'r' });
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
    expect(s.reads.length).toBeLessThanOrEqual(50);
    expect(s.clock.now() - start).toBeLessThanOrEqual(60_000);
    const gaps = s.reads.map((t, i) => t - (i === 0 ? start : s.reads[i - 1]!));
    // 1 s, 2 s, then 4 s steps (jitter 0); only the read at the budget's end may come sooner.
    expect(gaps.slice(0, 3)).toEqual([1_000, 2_000, 4_000]);
    expect(gaps.slice(0, -1).every((g) => g >= 1_000)).toBe(true);
    expect(s.reads.at(-1)).toBe(start + 60_000);
  });

  it('a success read that is not provably fresh is not verified, and a flip back to running is waited out', async () => {
    const clock = new FakeClock();
    const states = ['succeeded', 'running', 'running'];
    const action = defineAction<unknown, { state: string; key: string }>({
      name: 'job',
      description: 'Queues a job.',
      postcondition: 'The job finished.',
      mode: 'accepted',
      input: anyInput as never,
      target: () => 'job:1',
      execute: async () => accepted('job-1'),
      // The first read is an older job's success (another key); the real one then shows running.
      observe: async (_i, c) => {
        const state = states.shift() ?? 'running';
        return { state, key: state === 'succeeded' ? 'old-key' : c.idempotencyKey };
      },
      terminal: (o) => (o.state === 'succeeded' ? 'succeeded' : 'running'),
      expect: () => ({ state: 'succeeded' }),
      fresh: (o, c) => o.key === c.idempotencyKey,
      poll: { maxDurationMs: 10_000, maxReads: 3, initialDelayMs: 1_000, maxDelayMs: 1_000, jitter: 0 },
    });
    const c = await createRunner({ clock, random: () => 0 }).run(action, {}, { runId: 'r' });
    expect(c.status).not.toBe('verified');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
  });
});
