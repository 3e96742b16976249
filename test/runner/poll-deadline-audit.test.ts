import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';

const input = {
  '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) },
} as const;

// An export job on a fake provider: its state is the truth, and the verifier can be made to hang (a read that never
// answers until its step deadline aborts it) from a given read on.
function exportJob(opts: {
  poll: {
    maxDurationMs: number;
    maxReads: number;
    initialDelayMs: number;
    maxDelayMs: number;
    jitter?: number;
  };
  verifyTimeoutMs: number;
  random?: () => number;
}) {
  const clock = new FakeClock();
  const store = memoryStore();
  const job = {
    state: 'running' as 'running' | 'succeeded',
    succeedFrom: Number.POSITIVE_INFINITY,
    hangFrom: Number.POSITIVE_INFINITY,
    readMs: 0,
  };
  const readsAt: number[] = [];
  const action = defineAction({
    name: 'export_report',
    description: 'Queues a report export.',
    postcondition: 'The export is finished.',
    mode: 'accepted',
    input,
    target: () => 'report:1',
    execute: async () => accepted('job-1'),
    observe: async (_input, ctx) => {
      readsAt.push(clock.now());
      if (readsAt.length >= job.hangFrom) {
        // Hung: answers only when its step deadline aborts it.
        await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      }
      if (job.readMs > 0) await clock.sleep(job.readMs);
      return { state: readsAt.length >= job.succeedFrom ? 'succeeded' : job.state };
    },
    terminal: (o) => (o as { state: 'running' | 'succeeded' }).state,
    expect: () => ({ state: 'succeeded' }),
    verifyTimeoutMs: opts.verifyTimeoutMs,
    poll: { jitter: 0, ...opts.poll },
  });
  const runner = createRunner({ store, clock, random: opts.random ?? (() => 0), actions: [action] });
  return { clock, store, runner, action, job, readsAt, start: clock.now() };
}

describe('a read that starts at the end of the poll budget and hangs', () => {
  it('is cut at the budget end plus one second, and ends unknown (poll_budget_exhausted), never failed', async () => {
    // Reads at +4 s (running) and at +10 s, the budget's end, where the verifier hangs.
    const s = exportJob({
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 4_000, maxDelayMs: 8_000 },
      verifyTimeoutMs: 30_000,
    });
    s.job.hangFrom = 2;
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([4_000, 10_000]);
    // Before the fix the caller waited for the full 30 s step deadline: 40 s in all.
    expect(s.clock.now() - s.start).toBe(11_000);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
    expect(c.reason).toContain('the last read did not return in time');
    expect(await s.store.get(c.operationId)).toMatchObject({
      lifecycle: 'timed_out',
      status: 'unknown',
      reads: 2,
      nextPollAt: null,
    });
  });

  it('is cut at the budget end when it starts with more than a second left', async () => {
    // Reads at +2 s, +6 s (hung): 4 s of budget left, so it is cut at +10 s, not run to +36 s.
    const s = exportJob({
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 2_000, maxDelayMs: 4_000 },
      verifyTimeoutMs: 30_000,
    });
    s.job.hangFrom = 2;
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([2_000, 6_000]);
    expect(s.clock.now() - s.start).toBe(10_000);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
  });

  it('is cut the same way when a reconciler drives it', async () => {
    const s = exportJob({
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 8_000, maxDelayMs: 8_000 },
      verifyTimeoutMs: 30_000,
    });
    s.job.hangFrom = 1;
    const first = await s.runner.run(s.action, {}, { runId: 'r1', wait: false });
    s.clock.advance(9_500);
    await s.runner.reconcile({ once: true });
    // Started 0.5 s before the budget's end: cut one second later, not 30 s later.
    expect(s.clock.now() - s.start).toBe(10_500);
    expect(await s.store.get(first.operationId)).toMatchObject({
      lifecycle: 'timed_out',
      status: 'unknown',
      completion: { errorCode: 'poll_budget_exhausted' },
    });
  });

  it('still lets a late terminal state settle the operation on that last read', async () => {
    const s = exportJob({
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 4_000, maxDelayMs: 8_000 },
      verifyTimeoutMs: 30_000,
    });
    // The job finishes between the two reads; the second read, at the budget's end, takes 300 ms.
    s.job.succeedFrom = 2;
    s.job.readMs = 300;
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([4_000, 10_000]);
    expect(c.status).toBe('verified');
  });
});

describe('a poll of work whose budget was spent before the call', () => {
  it('gives its one read the full verifyTimeoutMs, so a slow verifier can still settle it', async () => {
    const s = exportJob({
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 8_000, maxDelayMs: 8_000 },
      verifyTimeoutMs: 30_000,
    });
    const first = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(first).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
    s.job.state = 'succeeded';
    s.job.readMs = 5_000;
    const later = await s.runner.poll(first.operationId);
    expect(later.status).toBe('verified');
  });
});

describe('poll delays', () => {
  it('stay finite and non-negative whatever the injected random returns', async () => {
    for (const value of [Number.NaN, 2, -1]) {
      const s = exportJob({
        poll: { maxDurationMs: 10_000, maxReads: 5, initialDelayMs: 1_000, maxDelayMs: 4_000, jitter: 0.5 },
        verifyTimeoutMs: 1_000,
        random: () => value,
      });
      const queued = await s.runner.run(s.action, {}, { runId: 'r1', wait: false });
      const due = (await s.store.get(queued.operationId))?.nextPollAt;
      expect(Number.isFinite(due)).toBe(true);
      expect(due! - s.start).toBeGreaterThanOrEqual(500);
      const waited = await s.runner.poll(queued.operationId, { wait: true });
      expect(waited).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
      expect(s.clock.sleeps.every((ms) => Number.isFinite(ms) && ms >= 0)).toBe(true);
      // Reads spread over the budget instead of all at one instant.
      const gaps = s.readsAt.slice(1).map((t, i) => t - s.readsAt[i]!);
      expect(gaps.every((gap) => gap >= 500)).toBe(true);
    }
  });

  it('never carry a read past the budget end', async () => {
    const s = exportJob({
      poll: { maxDurationMs: 10_000, maxReads: 20, initialDelayMs: 3_000, maxDelayMs: 60_000 },
      verifyTimeoutMs: 1_000,
    });
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([3_000, 9_000, 10_000]);
  });
});

describe('maxReads: 1 and a near-zero maxDurationMs', () => {
  it('maxReads 1 reads once after the first delay, then turns unknown', async () => {
    const s = exportJob({
      poll: { maxDurationMs: 60_000, maxReads: 1, initialDelayMs: 2_000, maxDelayMs: 2_000 },
      verifyTimeoutMs: 1_000,
    });
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([2_000]);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
    expect(c.reason).toContain('after 1 reads');
  });

  it('maxDurationMs 0 is refused with an error naming the field; 1 ms reads once at once', () => {
    expect(() =>
      exportJob({
        poll: { maxDurationMs: 0, maxReads: 5, initialDelayMs: 0, maxDelayMs: 0 },
        verifyTimeoutMs: 1_000,
      }),
    ).toThrow(/poll\.maxDurationMs/);
  });

  it('maxDurationMs 1 still reads once, so finished work verifies', async () => {
    const s = exportJob({
      poll: { maxDurationMs: 1, maxReads: 5, initialDelayMs: 250, maxDelayMs: 250 },
      verifyTimeoutMs: 1_000,
    });
    s.job.state = 'succeeded';
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([1]);
    expect(c.status).toBe('verified');
  });
});

// A flag on a lagging replica: the write is never visible, and the verifier hangs from a given read on.
function laggingFlag(settle: { timeoutMs: number; intervalMs: number }, hangFrom: number, readMs = 0) {
  const clock = new FakeClock();
  const readsAt: number[] = [];
  const action = defineAction({
    name: 'set_flag',
    description: 'Sets a flag.',
    postcondition: 'The flag is set.',
    input,
    target: () => 'flag',
    execute: async () => ({ ok: true }),
    observe: async (_input, ctx) => {
      readsAt.push(clock.now());
      if (readsAt.length >= hangFrom) {
        await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      }
      if (readMs > 0) await clock.sleep(readMs);
      return { set: readMs > 0 };
    },
    expect: () => ({ set: true }),
    verifyTimeoutMs: 30_000,
    settle,
  });
  const runner = createRunner({ store: memoryStore(), clock });
  return { clock, runner, action, readsAt, start: clock.now() };
}

describe('a re-read at the end of the settle window that hangs', () => {
  it('is cut one second after the window ends and leaves the action unknown, not failed', async () => {
    const s = laggingFlag({ timeoutMs: 2_000, intervalMs: 500 }, 5);
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(s.readsAt.map((t) => t - s.start)).toEqual([0, 500, 1_000, 1_500, 2_000]);
    // Before the fix: 2 s window + the full 30 s step deadline.
    expect(s.clock.now() - s.start).toBe(3_000);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'verifier_timeout' });
    expect(c.reason).toContain('before the settle window ended');
  });

  it('does not cut the first read, which is the verification itself', async () => {
    const s = laggingFlag({ timeoutMs: 0, intervalMs: 100 }, Number.POSITIVE_INFINITY, 3_000);
    const c = await s.runner.run(s.action, {}, { runId: 'r1' });
    expect(c.status).toBe('verified');
  });
});
