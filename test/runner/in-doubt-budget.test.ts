import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';

// A committed action whose request timed out after it may have landed, and whose verifier is down for good:
// every read back fails, so the outcome stays unknown.
function setupDown(maxReads = 5) {
  const clock = new FakeClock();
  const store = memoryStore();
  let reads = 0;
  let down = true;
  const action = defineAction({
    name: 'set_flag',
    description: 'Sets a flag.',
    postcondition: 'The flag is set.',
    input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
    target: () => 'flag',
    execute: async () => {
      throw new Error('ETIMEDOUT');
    },
    observe: async () => {
      reads++;
      if (down) throw new Error('verifier down');
      return { set: true };
    },
    expect: () => ({ set: true }),
    poll: { maxDurationMs: 60_000, maxReads, initialDelayMs: 1_000, maxDelayMs: 8_000, jitter: 0 },
  });
  const runner = createRunner({ store, clock, random: () => 0, actions: [action] });
  const recover = () => {
    down = false;
  };
  return { clock, store, runner, action, reads: () => reads, recover };
}

// Passes of a reconciler, each at the moment the record is next due, until it is no longer due.
async function reconcileUntilIdle(s: ReturnType<typeof setupDown>, id: string, limit = 50) {
  const gaps: number[] = [];
  for (let pass = 0; pass < limit; pass++) {
    const record = await s.store.get(id);
    if (record?.nextPollAt == null) return gaps;
    gaps.push(record.nextPollAt - s.clock.now());
    s.clock.advance(Math.max(0, record.nextPollAt - s.clock.now()));
    await s.runner.reconcile({ once: true });
  }
  throw new Error(`still due after ${limit} passes`);
}

describe('an in-doubt operation whose verifier never answers', () => {
  it('is read back with growing delays until its poll budget is spent, then no longer on its own', async () => {
    const s = setupDown();
    const first = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(first).toMatchObject({ status: 'unknown', errorCode: 'verifier_unavailable' });

    const gaps = await reconcileUntilIdle(s, first.operationId);
    // Backoff, not a fixed maxDelayMs: 1 s, 2 s, 4 s, 8 s (the first read was the run's own).
    expect(gaps).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(s.reads()).toBe(5);

    const record = await s.store.get(first.operationId);
    expect(record).toMatchObject({ status: 'unknown', nextPollAt: null, reads: 5 });
    expect(record?.completion).toMatchObject({
      errorCode: 'verifier_unavailable',
      nextAllowedAction: 'poll',
    });
    expect(record?.completion?.reason).toContain('no longer read back on its own');
    // Nothing more happens however long the reconciler runs.
    s.clock.advance(3_600_000);
    expect((await s.runner.reconcile({ once: true })).claimed).toBe(0);
    expect(s.reads()).toBe(5);
    const events = await s.store.events(first.operationId);
    expect(events.length).toBeLessThan(20);
  });

  it('stops at the budget’s duration when reads remain, and a poll still reads it once', async () => {
    const s = setupDown(1_000);
    const first = await s.runner.run(s.action, {}, { runId: 'r1' });
    const gaps = await reconcileUntilIdle(s, first.operationId);
    // 1 + 2 + 4 + 8 s, then 8 s steps until 60 s after the attempt, the last one cut to end there.
    expect(gaps.reduce((a, b) => a + b, 0)).toBe(60_000);
    expect(Math.max(...gaps)).toBe(8_000);
    const before = s.reads();
    const polled = await s.runner.poll(first.operationId);
    expect(s.reads()).toBe(before + 1);
    expect(polled).toMatchObject({ status: 'unknown', errorCode: 'verifier_unavailable' });
    expect((await s.store.get(first.operationId))?.nextPollAt).toBeNull();
  });

  it('settles as soon as the verifier answers again within the budget', async () => {
    const s = setupDown();
    const first = await s.runner.run(s.action, {}, { runId: 'r1' });
    s.recover();
    const record = await s.store.get(first.operationId);
    s.clock.advance((record?.nextPollAt ?? 0) - s.clock.now());
    await s.runner.reconcile({ once: true });
    expect(await s.store.get(first.operationId)).toMatchObject({ lifecycle: 'settled', status: 'verified' });
  });
});

describe('accepted work near the end of its poll budget', () => {
  it('is due again when the budget ends, not a whole backoff step later, and then turns unknown', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const action = defineAction({
      name: 'export_report',
      description: 'Queues a report export.',
      postcondition: 'The export is finished.',
      mode: 'accepted',
      input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
      target: () => 'report:1',
      execute: async () => accepted('job-1'),
      observe: async () => ({ state: 'running' }),
      terminal: () => 'running',
      expect: () => ({}),
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 8_000, maxDelayMs: 8_000, jitter: 0 },
    });
    const runner = createRunner({ store, clock, random: () => 0, actions: [action] });
    const start = clock.now();
    const first = await runner.run(action, {}, { runId: 'r1', wait: false });
    expect((await store.get(first.operationId))?.nextPollAt).toBe(start + 8_000);

    clock.advance(8_000);
    await runner.reconcile({ once: true });
    // The next step would be +16 s; the budget ends at +10 s.
    expect((await store.get(first.operationId))?.nextPollAt).toBe(start + 10_000);

    clock.advance(2_000);
    await runner.reconcile({ once: true });
    expect(await store.get(first.operationId)).toMatchObject({
      lifecycle: 'timed_out',
      status: 'unknown',
      nextPollAt: null,
    });
  });
});
