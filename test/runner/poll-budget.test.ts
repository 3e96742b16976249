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

describe('an in-doubt operation whose verifier is down', () => {
  it('is read ever more rarely, at most an hour apart, and never given up', async () => {
    const s = setupDown();
    const first = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(first).toMatchObject({ status: 'unknown', errorCode: 'verifier_unavailable' });
    const gaps: number[] = [];
    const twoDays = s.clock.now() + 48 * 3_600_000;
    while (s.clock.now() < twoDays) {
      const due = (await s.store.get(first.operationId))?.nextPollAt;
      expect(due).not.toBeNull();
      gaps.push((due ?? 0) - s.clock.now());
      s.clock.advance((due ?? 0) - s.clock.now());
      await s.runner.reconcile({ once: true });
    }
    // maxDelayMs at first, then a quarter of the time undecided, capped at an hour.
    expect(gaps[0]).toBe(8_000);
    expect(gaps.every((gap, i) => i === 0 || gap >= gaps[i - 1]!)).toBe(true);
    expect(Math.max(...gaps)).toBe(3_600_000);
    // Every 8 s for two days would be 21 600 reads, and twice as many events (a claim and a status per read).
    expect(s.reads()).toBeLessThan(100);
    expect((await s.store.events(first.operationId)).length).toBeLessThan(2 * 100);

    s.recover();
    s.clock.advance(((await s.store.get(first.operationId))?.nextPollAt ?? 0) - s.clock.now());
    await s.runner.reconcile({ once: true });
    expect(await s.store.get(first.operationId)).toMatchObject({ lifecycle: 'settled', status: 'verified' });
  });

  it('is read again while unknown and settles as soon as the verifier answers', async () => {
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

describe('a settle window shorter than one interval', () => {
  it('still re-reads at its end, so a write the replica shows within the window verifies', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    let written = false;
    const action = defineAction({
      name: 'set_flag',
      description: 'Sets a flag.',
      postcondition: 'The flag is set.',
      input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
      target: () => 'flag',
      execute: async () => {
        written = true;
        return { ok: true };
      },
      // A replica 50 ms behind the primary.
      observe: async () => (written && clock.now() >= start + 50 ? { set: true } : { set: false }),
      expect: () => ({ set: true }),
      settle: { timeoutMs: 80 },
    });
    const c = await createRunner({ store: memoryStore(), clock }).run(action, {}, { runId: 'r' });
    expect(c.status).toBe('verified');
    expect(clock.now() - start).toBe(80);
  });
});
