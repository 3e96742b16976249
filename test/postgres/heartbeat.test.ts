// The reconciler's side of leases: heartbeats keep a lease alive through a read longer than the lease
// (on Postgres, against a competing claimer), and a reconcile loop whose store is unreachable keeps
// going with growing pauses instead of crashing.
import { describe, expect, it } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';
import { postgresStore } from '../../src/postgres/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import { memoryStore } from '../../src/store/memory.js';
import type { Claim, OperationStore } from '../../src/store/types.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { FakeClock } from '../../src/testing/fakes/fake-clock.js';
import { PG_URL, pgSuite } from './support.js';

interface Item {
  n: number;
}
const passThrough: StandardSchemaV1<unknown, Item> = {
  '~standard': { version: 1, vendor: 'heartbeat-test', validate: (value) => ({ value: value as Item }) },
};

/** An action over an in-memory target whose first read takes `slowMs`. */
function slowAction(slowMs: number) {
  const applied = new Map<string, number>();
  let reads = 0;
  const action = defineAction({
    name: 'hb.apply',
    description: 'Applies an item at an in-memory target',
    postcondition: 'the target applied the operation once',
    input: passThrough,
    target: (i) => `item:${i.n}`,
    safeToRepeat: true,
    executeTimeoutMs: 1_000,
    maxInFlightMs: 100,
    verifyTimeoutMs: 10_000,
    async execute(_i, ctx) {
      applied.set(ctx.operationId, (applied.get(ctx.operationId) ?? 0) + 1);
      return { ok: true };
    },
    async observe(_i, ctx) {
      if (reads++ === 0 && slowMs > 0) await new Promise((resolve) => setTimeout(resolve, slowMs));
      const n = applied.get(ctx.operationId);
      return n === undefined ? null : { executions: n };
    },
    expect: () => ({ executions: 1 }),
  });
  return { action, applied };
}

/** Leaves op-1 as a run that crashed mid-execute leaves it: executing, the in-flight window over, due. */
async function seedInDoubt(store: OperationStore, now: number): Promise<void> {
  const t0 = now - 60_000;
  await store.reserve(newOp(1, { action: 'hb.apply', input: { n: 1 }, requestedAt: t0 }), ev('reserved', t0));
  const moved = await store.transition(
    'op-1',
    ['requested'],
    { lifecycle: 'executing', attempt: 1, executedAt: t0, inFlightUntil: t0 + 1, nextPollAt: t0 + 2 },
    ev('executing', t0),
  );
  expect(moved?.lifecycle).toBe('executing');
}

const { available, tempSchema } = await pgSuite();

/** Runs one reconcile pass with a 600 ms lease over a 2 s read while a thief keeps trying to claim. */
async function raceThief(withoutHeartbeats: boolean) {
  const schema = tempSchema();
  const store = await postgresStore({ connectionString: PG_URL, schema });
  const thief = await postgresStore({ connectionString: PG_URL, schema });
  try {
    await seedInDoubt(store, Date.now());
    const { action, applied } = slowAction(2_000);
    const used: OperationStore = withoutHeartbeats ? { ...store, renewLease: undefined } : store;
    const runner = createRunner({ store: used, actions: [action], retryBudget: 2 });
    let finished = false;
    const pass = runner.reconcile({ once: true, leaseMs: 600, owner: 'beater' }).finally(() => {
      finished = true;
    });
    const stolen: Claim[] = [];
    while (!finished) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      stolen.push(...(await thief.claimDue(1, 600, 'thief', Date.now())));
    }
    const report = await pass;
    const events = await store.events('op-1');
    return { report, stolen, applied, events, record: await store.get('op-1') };
  } finally {
    await store.close();
    await thief.close();
  }
}

describe.skipIf(!available)('heartbeats (Postgres)', () => {
  it('keep a 600 ms lease through a 2 s read: the competing claimer gets nothing', async () => {
    const { report, stolen, applied, events, record } = await raceThief(false);
    expect(stolen).toEqual([]);
    expect(report.byStatus.verified).toBe(1);
    expect(report.leasesLost).toBeUndefined();
    expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified', leaseToken: null });
    expect([...applied.values()]).toEqual([1]);
    expect(events.filter((e) => e.type === 'claimed').map((e) => e.actor)).toEqual(['beater']);
  });

  it('without them the same read loses its lease to the competitor, and its late write is refused', async () => {
    const { report, stolen, events } = await raceThief(true);
    // The thief never drives what it takes, so it may re-claim its own lapsed lease: all claims are its.
    expect(stolen.length).toBeGreaterThan(0);
    expect(new Set(stolen.map((c) => c.record.leaseOwner))).toEqual(new Set(['thief']));
    expect(report.byStatus.verified).toBe(0);
    expect(events.filter((e) => e.actor === 'beater').map((e) => e.type)).toEqual(['claimed']);
  });
});

describe('a reconcile loop whose store is unreachable', () => {
  it('counts the failures, reports progress, backs off and carries on when the store is back', async () => {
    const clock = new FakeClock();
    const memory = memoryStore();
    await seedInDoubt(memory, clock.now());
    let outages = 3;
    const store: OperationStore = {
      ...memory,
      async claimDue(...args) {
        if (outages-- > 0) {
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        }
        return memory.claimDue(...args);
      },
    };
    const { action, applied } = slowAction(0);
    const runner = createRunner({ store, clock, actions: [action], retryBudget: 2 });
    const stop = new AbortController();
    const progress: number[] = [];
    const report = await runner.reconcile({
      idleMs: 100,
      signal: stop.signal,
      onProgress: (r) => {
        progress.push(r.errors);
        if (r.byStatus.verified === 1) stop.abort();
      },
    });
    expect(report.errors).toBe(3);
    expect(report.lastError).toContain('ECONNREFUSED');
    expect(progress).toEqual([1, 2, 3, 3]);
    // The pause doubles while claims keep failing.
    expect(clock.sleeps.slice(0, 3)).toEqual([100, 200, 400]);
    expect([...applied.values()]).toEqual([1]);
    expect((await memory.get('op-1'))?.status).toBe('verified');
  });
});
