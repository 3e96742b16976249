import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createRunner, defineAction, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';
import { exportJobAction } from '../support/export-job.js';

/**
 * An export job the provider finishes `doneAfterMs` after it was queued. With the backoff above the runner's
 * own schedule reads at +1 s, +3 s and +7 s: a job done at +7 s verifies on the third of four reads.
 */
function exportJob(doneAfterMs = 7_000, clock: Clock = new FakeClock()) {
  const store = memoryStore();
  const reads: number[] = [];
  const action = exportJobAction(clock, doneAfterMs, reads);
  const runner = createRunner({ store, clock, random: () => 0, actions: [action] });
  return { store, reads, action, runner };
}

const iso = (ms: number | null | undefined) => new Date(ms ?? Number.NaN).toISOString();

describe('polling accepted work faster than its schedule', () => {
  it('a tight poll loop no longer spends poll.maxReads: the job verifies on the schedule', async () => {
    const clock = new FakeClock();
    const s = exportJob(7_000, clock);
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    let c = first;
    let polls = 0;
    // An eager agent: poll every 10 ms until the status is no longer pending.
    while (c.status === 'pending' && polls < 2_000) {
      c = await s.runner.poll(first.operationId);
      polls++;
      if (c.status === 'pending') clock.advance(10);
    }
    expect(c).toMatchObject({ status: 'verified', nextAllowedAction: 'none' });
    expect(c.pollAfter).toBeUndefined();
    // Read only when due, never on the caller's pace: three reads of the four the budget allows.
    expect(s.reads).toEqual([1_000, 3_000, 7_000]);
    expect(await s.store.get(first.operationId)).toMatchObject({ lifecycle: 'settled', reads: 3 });
    expect(polls).toBeGreaterThan(600);
  });

  it('an early poll appends no event, calls no observe, and returns the stored pending completion', async () => {
    const clock = new FakeClock();
    const s = exportJob(7_000, clock);
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    const events = (await s.store.events(first.operationId)).length;
    const stored = (await s.store.get(first.operationId))?.completion;

    clock.advance(999);
    const early = await s.runner.poll(first.operationId);
    // A duplicate run of the same call, not waiting, is paced the same way.
    const duplicate = await s.runner.run(s.action, {}, { runId: 'r', wait: false });

    expect(s.reads).toEqual([]);
    expect(await s.store.events(first.operationId)).toHaveLength(events);
    expect(early).toEqual(stored);
    expect(duplicate).toEqual(stored);
    expect(early).toMatchObject({ status: 'pending', nextAllowedAction: 'poll', pollAfter: first.pollAfter });
    expect(await s.store.get(first.operationId)).toMatchObject({ lifecycle: 'accepted', reads: 0 });

    // Due: the next poll reads.
    clock.advance(1);
    const due = await s.runner.poll(first.operationId);
    expect(due.status).toBe('pending');
    expect(s.reads).toEqual([1_000]);
    expect((await s.store.events(first.operationId)).length).toBeGreaterThan(events);
  });
});

describe('pollAfter', () => {
  it('is the record’s nextPollAt on each pending completion, and absent once settled', async () => {
    const clock = new FakeClock();
    const s = exportJob(7_000, clock);
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    let record = await s.store.get(first.operationId);
    expect(record?.nextPollAt).toBe(clock.now() + 1_000);
    expect(first.pollAfter).toBe(iso(record?.nextPollAt));
    expect(record?.completion?.pollAfter).toBe(first.pollAfter);

    clock.advance(1_000);
    const second = await s.runner.poll(first.operationId);
    record = await s.store.get(first.operationId);
    expect(record?.nextPollAt).toBe(clock.now() + 2_000);
    expect(second).toMatchObject({ status: 'pending', pollAfter: iso(record?.nextPollAt) });

    const done = await s.runner.poll(first.operationId, { wait: true });
    expect(done.status).toBe('verified');
    expect(done.pollAfter).toBeUndefined();
    expect((await s.store.get(first.operationId))?.completion?.pollAfter).toBeUndefined();
  });

  it('marks an in-doubt unknown with its read-back time; a poll of it still reads at once', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    let observes = 0;
    const action = defineAction({
      name: 'set_flag',
      description: 'Sets a flag.',
      postcondition: 'The flag is set.',
      input: anyInput as never,
      target: () => 'flag',
      execute: async () => {
        throw new Error('ETIMEDOUT');
      },
      observe: async () => {
        observes++;
        return null;
      },
      expect: () => ({ set: true }),
      maxInFlightMs: 30_000,
    });
    const runner = createRunner({ store, clock, random: () => 0, actions: [action] });
    const c = await runner.run(action, {}, { runId: 'r' });
    const record = await store.get(c.operationId);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'in_flight', nextAllowedAction: 'poll' });
    expect(record?.lifecycle).toBe('executing');
    expect(c.pollAfter).toBe(iso(record?.nextPollAt));
    expect(record?.nextPollAt ?? 0).toBeGreaterThan(clock.now());

    // In-doubt work is not paced: a landed write may become visible before the window ends.
    const before = observes;
    await runner.poll(c.operationId);
    expect(observes).toBe(before + 1);
  });
});

describe('poll(id, { wait: true }) before the due time', () => {
  it('waits until due, not a whole backoff step from now, and reads once', async () => {
    const clock = new FakeClock();
    const s = exportJob(1_000, clock);
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    const queued = clock.now();
    clock.advance(400);
    const c = await s.runner.poll(first.operationId, { wait: true });
    expect(c.status).toBe('verified');
    expect(clock.now() - queued).toBe(1_000);
    expect(clock.sleeps).toContain(600);
    expect(s.reads).toEqual([1_000]);
  });

  it('aborted during the wait: returns the pending completion, reads nothing, keeps the schedule', async () => {
    const fake = new FakeClock();
    const controller = new AbortController();
    // Aborts once the wait has begun (after its sleeper is registered, before the fake clock wakes it).
    const clock: Clock = {
      now: () => fake.now(),
      sleep: (ms, signal) => {
        const slept = fake.sleep(ms, signal);
        if (signal === controller.signal) queueMicrotask(() => controller.abort());
        return slept;
      },
    };
    const s = exportJob(1_000, clock);
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    const before = await s.store.get(first.operationId);
    const events = (await s.store.events(first.operationId)).length;

    const c = await s.runner.poll(first.operationId, { wait: true, signal: controller.signal });
    expect(controller.signal.aborted).toBe(true);
    expect(c).toMatchObject({ status: 'pending', nextAllowedAction: 'poll', pollAfter: first.pollAfter });
    expect(s.reads).toEqual([]);
    expect(fake.now()).toBe(before?.requestedAt);
    // The wait kept reconcilers off the record while it lasted, and gave the due time back when it ended.
    const added = (await s.store.events(first.operationId)).slice(events).map((e) => e.type);
    expect(added).toEqual(['waiting', 'waiting_ended']);
    expect(await s.store.get(first.operationId)).toMatchObject({
      lifecycle: 'accepted',
      reads: 0,
      nextPollAt: before?.nextPollAt,
    });
  });
});
