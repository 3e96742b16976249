import { describe, expect, it } from 'vitest';
import { createRunner, defineAction, memoryStore } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { schema } from '../../src/testing/schema.js';
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

describe('work a live run is still following is not due for reconcilers', () => {
  it('accepted work the run waits on: not claimable between its reads, due again once it stops', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const poll = {
      maxDurationMs: 600_000,
      maxReads: 10,
      initialDelayMs: 50_000,
      maxDelayMs: 50_000,
      jitter: 0,
    };
    const p = jobProvider(clock, { poll });
    const live = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const caller = new AbortController();
    const claimable: number[] = [];
    p.onRead = async (n) => {
      // Each read comes 50 s after the one before, far past the crash deadline of the move to executing.
      claimable.push((await store.claimDue(10, 60_000, 'other-host', clock.now())).length);
      if (n === 3) caller.abort(); // the agent stops waiting after the third read
    };
    const c = await live.run(p.job, { id: 'j1' }, { runId: 'r1', signal: caller.signal });
    expect(p.reads).toHaveLength(3);
    expect(claimable).toEqual([0, 0, 0]);
    // The run parks the work it stops following, which reconcilers take from its due time on.
    expect(c.status).toBe('pending');
    const record = (await store.get(c.operationId))!;
    expect(record.reads).toBe(3);
    expect(await store.claimDue(10, 60_000, 'other-host', record.nextPollAt! - 1)).toHaveLength(0);
    expect(await store.claimDue(10, 60_000, 'other-host', record.nextPollAt!)).toHaveLength(1);
  });

  it('a committed action in its settle window: not claimable while the run re-reads', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const rows = new Map<string, string>();
    let reads = 0;
    const claimable: number[] = [];
    const action = defineAction({
      name: 'set_row',
      description: 'Sets a row on a lagging replica',
      input: schema({ id: 'string' }),
      target: (i: { id: string }) => `row:${i.id}`,
      postcondition: 'The row reads back as set.',
      executeTimeoutMs: 1_000,
      maxInFlightMs: 1_000,
      settle: { timeoutMs: 60_000, intervalMs: 10_000 },
      execute: async (i: { id: string }) => {
        rows.set(i.id, 'set');
        return { ok: true };
      },
      // The replica shows the write only from the fourth read on, 30 s after execute.
      observe: async (i: { id: string }) => {
        if (++reads > 1) claimable.push((await store.claimDue(10, 60_000, 'other-host', clock.now())).length);
        return reads >= 4 ? { id: i.id, state: rows.get(i.id) } : null;
      },
      expect: (i: { id: string }) => ({ id: i.id, state: 'set' }),
    });
    const live = createRunner({ store, clock, random: () => 0.5 });
    const c = await live.run(action, { id: 'a' }, { runId: 'r1' });
    expect(c.status).toBe('verified');
    expect(reads).toBe(4);
    expect(claimable).toEqual([0, 0, 0]);
  });
});

describe('a single reconcile pass', () => {
  it('reaches every operation due when it began, even behind ones it drove that are due again at once', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    // A zero poll delay parks driven work due again at the same instant, ahead of the rest in claim order.
    const p = jobProvider(clock, {
      poll: { maxDurationMs: 60_000, maxReads: 20, initialDelayMs: 0, maxDelayMs: 0, jitter: 0 },
    });
    let n = 0;
    const agent = createRunner({ store, clock, random: () => 0.5, newId: () => `op-${n++}` });
    const ids: string[] = [];
    for (const id of ['a', 'b', 'c'])
      ids.push((await agent.run(p.job, { id }, { runId: 'r', wait: false })).operationId);
    const reconciler = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const report = await reconciler.reconcile({ once: true, concurrency: 1 });
    expect(report.claimed).toBe(3);
    for (const id of ids) expect((await store.get(id))!).toMatchObject({ reads: 1, leaseToken: null });
  });
});

describe('a waiting poll resumed on parked accepted work', () => {
  it('a reconciler does not claim parked accepted work a waiting poll is following', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = jobProvider(clock, {
      poll: { maxDurationMs: 600_000, maxReads: 4, initialDelayMs: 50_000, maxDelayMs: 50_000, jitter: 0 },
    });
    const live = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    // The agent's call does not wait: the work is parked pending, due at its first backoff step.
    const first = await live.run(p.job, { id: 'j1' }, { runId: 'r1', wait: false });
    expect(first.status).toBe('pending');
    let claimedWhileLive = -1;
    p.onRead = async (n) => {
      // The waiting poll's first read, at the parked due time: is the record up for grabs?
      if (n === 1) claimedWhileLive = (await store.claimDue(10, 60_000, 'other-host', clock.now())).length;
    };
    await live.poll(first.operationId, { wait: true });
    expect(claimedWhileLive).toBe(0);
  });

  it('poll.maxReads holds with a waiting poll and a reconciler pass', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = jobProvider(clock, {
      poll: { maxDurationMs: 600_000, maxReads: 4, initialDelayMs: 50_000, maxDelayMs: 50_000, jitter: 0 },
    });
    const live = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const other = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const first = await live.run(p.job, { id: 'j1' }, { runId: 'r1', wait: false });
    let report: { claimed: number } | undefined;
    p.onRead = async (n) => {
      if (n === 1) report = await other.reconcile({ once: true, owner: 'reconciler' });
    };
    await live.poll(first.operationId, { wait: true });
    const record = await store.get(first.operationId);
    // The stored count must be the reads made (the budget is counted from it).
    expect({ stored: record?.reads, made: p.reads.length, claimed: report?.claimed }).toEqual({
      stored: p.reads.length,
      made: p.reads.length,
      claimed: 0,
    });
  });
});

describe('a reconciler whose write loses to another writer', () => {
  it('gives its lease back, so the record is claimable when due instead of after the lease lapses', async () => {
    const clock = new FakeClock();
    const store = memoryStore();
    const p = jobProvider(clock);
    const agent = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    const parked = await agent.run(p.job, { id: 'j1' }, { runId: 'r', wait: false });
    clock.advance(Math.max(0, Date.parse(parked.pollAfter!) - clock.now()));
    p.onRead = async () => {
      // While the reconciler reads, another writer moves the record on (a retry of its own): the reconciler's
      // write no longer matches.
      const r = (await store.get(parked.operationId))!;
      const at = clock.now();
      await store.transition(
        r.id,
        [r.lifecycle],
        { lifecycle: 'executing', attempt: r.attempt + 1, nextPollAt: at + 60_000 },
        {
          type: 'executing',
          at,
          from: r.lifecycle,
          to: 'executing',
          status: r.status,
          actor: 'live',
          attempt: r.attempt + 1,
        },
      );
    };
    const reconciler = createRunner({ store, clock, random: () => 0.5, actions: [p.job] });
    await reconciler.reconcile({ once: true, owner: 'rec-1', leaseMs: 60_000 });
    const record = (await store.get(parked.operationId))!;
    expect(record).toMatchObject({ lifecycle: 'executing', leaseToken: null, leaseOwner: null });
    expect((await store.events(record.id)).at(-1)).toMatchObject({ type: 'lease_released', actor: 'rec-1' });
  });
});
