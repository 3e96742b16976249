import { describe, expect, it } from 'vitest';
import { createRunner, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { crashMidExecute, jobProvider } from '../fixtures/jobs.js';

// A long poll budget: a drive that waited it out would read many times and move the clock by minutes.
const LONG_POLL = {
  maxDurationMs: 600_000,
  maxReads: 50,
  initialDelayMs: 10_000,
  maxDelayMs: 60_000,
  jitter: 0,
};

describe('a reconciler round on accepted work a crash left in doubt', () => {
  it('reads once and parks it pending, instead of waiting out the poll budget inside the round', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = jobProvider(clock, { poll: LONG_POLL });
    const { id } = await crashMidExecute(store, clock.now(), p.job, { id: 'j1' }, 'job:j1');
    p.jobs.set('j1', 'running'); // the job was created before the crash
    clock.advance(2_000);
    const t0 = clock.now();
    const reconciler = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const report = await reconciler.reconcile({ once: true });
    expect(report).toMatchObject({ claimed: 1, byStatus: { pending: 1 } });
    expect(p.reads).toHaveLength(1);
    expect(clock.now()).toBe(t0);
    const record = (await store.get(id))!;
    expect(record).toMatchObject({ lifecycle: 'running', status: 'pending', leaseToken: null });
    expect(record.nextPollAt).toBeGreaterThan(t0);
  });

  it('a stop during its read ends the loop after that read, not after the whole budget', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = jobProvider(clock, { poll: LONG_POLL });
    await crashMidExecute(store, clock.now(), p.job, { id: 'j1' }, 'job:j1');
    p.jobs.set('j1', 'running');
    clock.advance(2_000);
    const stop = new AbortController();
    p.onRead = () => stop.abort(); // SIGTERM arrives during the first read
    const reconciler = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const report = await reconciler.reconcile({ signal: stop.signal, idleMs: 10 });
    expect(report.claimed).toBe(1);
    expect(p.reads).toHaveLength(1);
  });
});

describe('a reconciler stopped just before a retry the read proved safe', () => {
  it('leaves the retry due at once for the next reconciler, not up to an hour later', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = jobProvider(clock);
    const { id } = await crashMidExecute(store, clock.now(), p.job, { id: 'j1' }, 'job:j1');
    clock.advance(4 * 3_600_000); // the reconcilers were down for 4 h; the job was never created
    const stop = new AbortController();
    p.onRead = () => stop.abort(); // a rolling deploy's SIGTERM during the in-doubt read
    const first = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    await first.reconcile({ signal: stop.signal, idleMs: 10 });
    const record = (await store.get(id))!;
    expect(record.completion).toMatchObject({ status: 'unknown', errorCode: 'aborted' });
    expect(record.nextPollAt).toBe(clock.now());
    expect(p.sends).toEqual([]);
    // The replacement reconciler starts a few seconds later and makes the retry.
    clock.advance(10_000);
    const next = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const report = await next.reconcile({ once: true });
    expect(report.claimed).toBe(1);
    expect(p.sends).toEqual(['j1']);
  });
});
