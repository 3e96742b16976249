import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { schema } from '../../src/testing/schema.js';

/** A queued-job provider the test controls: jobs stay running until finished, reads can be held. */
function provider(
  clock: FakeClock,
  poll = { maxDurationMs: 10_000, maxReads: 100, initialDelayMs: 1_000, maxDelayMs: 4_000, jitter: 0.5 },
) {
  const jobs = new Map<string, 'running' | 'done'>();
  const sends: string[] = [];
  let hold: Promise<void> | undefined;
  const reads: number[] = [];
  const job = defineAction({
    name: 'run_job',
    description: 'Run a job.',
    input: schema({ id: 'string' }),
    target: (i: { id: string }) => `job:${i.id}`,
    mode: 'accepted',
    postcondition: 'The job is done.',
    async execute(i: { id: string }) {
      sends.push(i.id);
      jobs.set(i.id, 'running');
      return accepted(i.id);
    },
    async observe(i: { id: string }) {
      reads.push(clock.now());
      await api.onRead?.();
      if (hold) await hold;
      const s = jobs.get(i.id);
      return s ? { id: i.id, state: s } : null;
    },
    terminal: (o: { state: string }) => (o.state === 'done' ? 'succeeded' : 'running'),
    expect: (i: { id: string }) => ({ id: i.id, state: 'done' }),
    safeToRepeat: true,
    maxInFlightMs: 1_000,
    poll,
  });
  const api = {
    onRead: undefined as undefined | (() => Promise<void>),
    jobs,
    sends,
    reads,
    job,
    holdReads() {
      let release!: () => void;
      hold = new Promise<void>((r) => {
        release = r;
      });
      return () => {
        hold = undefined;
        release();
      };
    },
  };
  return api;
}

const ctx = { runId: 'run-1' };

describe('reconcile audit', () => {
  it('a lease that lapses mid-read cannot complete the operation; the new owner does, once', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = provider(clock);
    const agent = createRunner({ store, clock, random: () => 0.5 });
    const c = await agent.run(p.job, { id: 'j1' }, { ...ctx, wait: false });
    clock.advance(5_000);
    const a = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const b = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    let inner: Promise<unknown> | undefined;
    p.onRead = async () => {
      if (inner) return;
      clock.advance(1_000); // A's lease (100 ms) lapses during its slow read; B takes over and settles
      p.jobs.set('j1', 'done');
      inner = b.reconcile({ once: true, leaseMs: 100, owner: 'B' });
      await inner;
    };
    const first = await a.reconcile({ once: true, leaseMs: 100, owner: 'A' });
    // A read "done" too, but its write under the lapsed token was refused: it reports what B recorded.
    expect(first).toMatchObject({ claimed: 1, errors: 0 });
    const events = await store.events(c.operationId);
    const settled = events.filter((e) => e.type === 'settled');
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ actor: 'B', status: 'verified' });
    const takeover = events.findIndex((e) => e.type === 'claimed' && e.actor === 'B');
    expect(events.slice(takeover + 1).every((e) => e.actor === 'B')).toBe(true);
    expect(p.sends).toHaveLength(1);
  });

  it('backoff with jitter stays within its bounds, and an exhausted budget ends unknown', async () => {
    for (const rnd of [0, 0.5, 0.999999]) {
      const clock = new FakeClock();
      const store = memoryStore();
      const p = provider(clock);
      const agent = createRunner({ store, clock, random: () => rnd, actions: [p.job] });
      const c = await agent.run(p.job, { id: 'j1' }, { ...ctx, wait: false });
      const accepted = (await store.get(c.operationId))?.acceptedAt ?? Number.NaN;
      for (let i = 0; i < 40; i++) {
        const r = (await store.get(c.operationId))!;
        if (r.nextPollAt === null) break;
        // Delay before read n: min(maxDelay, initial·2ⁿ) scaled by (1 − jitter·random), jitter 0.5.
        // The last step is cut short so the record is due when the budget ends, not after it.
        const base = Math.min(4_000, 1_000 * 2 ** r.reads);
        const from = r.lastObservedAt ?? accepted;
        const delay = r.nextPollAt - from;
        expect(delay).toBeGreaterThanOrEqual(Math.min(Math.floor(base * 0.5), accepted + 10_000 - from));
        expect(delay).toBeLessThanOrEqual(base);
        expect(r.nextPollAt).toBeLessThanOrEqual(accepted + 10_000);
        clock.set(r.nextPollAt);
        await agent.reconcile({ once: true });
      }
      const final = (await store.get(c.operationId))!;
      expect(final).toMatchObject({ lifecycle: 'timed_out', status: 'unknown', nextPollAt: null });
      expect(final.completion).toMatchObject({
        errorCode: 'poll_budget_exhausted',
        operationId: c.operationId,
      });
      // Exactly when the budget ends: never before it, and no backoff step after it.
      expect(clock.now()).toBe(accepted + 10_000);
      expect(p.sends).toEqual(['j1']);
    }
  });

  it('an abort mid-reconcile finishes in-flight work and leaves nothing leased', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = provider(clock);
    const agent = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await agent.run(p.job, { id: `j${i}` }, { ...ctx, wait: false })).operationId);
    clock.advance(5_000);
    const release = p.holdReads();
    const stop = new AbortController();
    const loop = agent.reconcile({ concurrency: 2, signal: stop.signal, idleMs: 10 });
    await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    release();
    const report = await loop;
    expect(report.claimed).toBeGreaterThan(0);
    expect(report.errors).toBe(0);
    for (const id of ids) {
      const r = await store.get(id);
      expect(r?.leaseToken).toBeNull();
    }
  });

  it('concurrency above the due count', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = provider(clock);
    const agent = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    await agent.run(p.job, { id: 'j1' }, { ...ctx, wait: false });
    clock.advance(5_000);
    const report = await agent.reconcile({ once: true, concurrency: 1000 });
    expect(report.claimed).toBe(1);
  });
});
