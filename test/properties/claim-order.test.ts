// The SQLite and Postgres claims are hand-written SQL over indexes (one ordered walk per lifecycle in SQLite, the
// partial due index in Postgres); the memory store's claim is a filter and a sort. For random operations and
// random claims, all three must lease the same operations in the same order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { memoryStore } from '../../src/store/memory.js';
import type { Lifecycle, OperationStore } from '../../src/store/types.js';
import { ALL, ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { openHandle } from '../fixtures/sqlite/support.js';
import { pgSuite } from '../postgres/support.js';

const { available: pgUp, tempSchema, tempPool } = await pgSuite();

const operation = fc.record({
  // Mostly claimable lifecycles and few distinct due times: ties, and claims that cut through them.
  lifecycle: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom<Lifecycle>('requested', 'running', 'accepted') },
    { weight: 1, arbitrary: fc.constantFrom<Lifecycle>(...ALL) },
  ),
  nextPollAt: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null, freq: 8 }),
  requestedAt: fc.integer({ min: 0, max: 3 }),
  action: fc.constantFrom('a', 'b', 'c'),
  // A lease someone holds until this time (null: none); claims below run at 0–6.
  leaseUntil: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }),
});
const claim = fc.record({
  limit: fc.integer({ min: 1, max: 3 }),
  now: fc.integer({ min: 0, max: 6 }),
  // Distinct names, or a list with repeats and names no operation has; past 16 distinct names the SQLite store
  // claims in one walk instead of one per action.
  actions: fc.option(
    fc.oneof(
      fc.subarray(['a', 'b', 'c', 'z']),
      fc.array(fc.constantFrom('a', 'b', 'c', ...Array.from({ length: 17 }, (_, i) => `x${i}`)), {
        minLength: 1,
        maxLength: 30,
      }),
    ),
    { nil: undefined },
  ),
});
const scenario = fc.record({
  operations: fc.array(operation, { minLength: 1, maxLength: 20 }),
  claims: fc.array(claim, { minLength: 1, maxLength: 6 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

/** Sets up the operations, runs the claims, and returns what each claim leased: ids and expiries. */
async function play(store: OperationStore, { operations, claims }: Scenario) {
  try {
    for (const [n, op] of operations.entries()) {
      await store.reserve(newOp(n, { action: op.action, requestedAt: T0 + op.requestedAt }), ev('reserved'));
      const lease =
        op.leaseUntil === null
          ? {}
          : { leaseOwner: 'other', leaseToken: `t-${n}`, leaseExpiresAt: T0 + op.leaseUntil };
      const patch = {
        lifecycle: op.lifecycle,
        nextPollAt: op.nextPollAt === null ? null : T0 + op.nextPollAt,
        ...lease,
      };
      const moved = await store.transition(`op-${n}`, ALL, patch, ev(op.lifecycle));
      if (moved === null) throw new Error(`op-${n} did not move`);
    }
    const leased: string[][] = [];
    for (const c of claims) {
      const taken = await store.claimDue(c.limit, 10, 'worker', T0 + c.now, { actions: c.actions });
      leased.push(taken.map((t) => `${t.record.id}@${t.leaseExpiresAt - T0}`));
    }
    return leased;
  } finally {
    await store.close();
  }
}

describe('claimDue across stores', () => {
  it('SQLite leases what the memory store leases, in the same order', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const expected = await play(memoryStore(), s);
        expect(await play(await sqliteStore({ database: await openHandle() }), s)).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });

  it.skipIf(!pgUp)('Postgres leases what the memory store leases, in the same order', async () => {
    const pool = tempPool(2);
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const expected = await play(memoryStore(), s);
        // The caller's clock for leases, as the memory store has no other.
        const store = await postgresStore({ pool, schema: tempSchema(), leaseClock: 'caller' });
        expect(await play(store, s)).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });
});
