// Leases on the database clock (the default): expiry is the server's now + leaseMs, and whether a lease
// is live is decided by the server's clock, so callers whose clocks are skewed can neither steal a live
// lease nor hold one past its end. The caller-clock mode, which the conformance suite uses, shows the
// difference: there a caller an hour ahead does take the lease.
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import type { OperationStore } from '../../src/store/types.js';
import { move, reserve, T0 } from '../../src/testing/conformance/support.js';
import { withClient } from './fleet.js';
import { PG_URL, pgSuite } from './support.js';

const HOUR = 3_600_000;
const { available, tempSchema } = await pgSuite();

/** The server's clock in epoch ms. */
const dbNow = () =>
  withClient(PG_URL, async (db) =>
    Number((await db.query('SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS t')).rows[0].t),
  );

/** A store with one operation that is due from T0 on (long ago on every clock). */
async function storeWithDueOp(leaseClock?: 'database' | 'caller'): Promise<OperationStore> {
  const schema = tempSchema();
  const store = await postgresStore({
    connectionString: PG_URL,
    schema,
    ...(leaseClock ? { leaseClock } : {}),
  });
  await reserve(store, 1);
  await move(store, 'op-1', 'running', T0 + 1, { nextPollAt: T0 + 10 });
  return store;
}

describe.skipIf(!available)('leases on the database clock (Postgres)', () => {
  it('takes expiry from the server clock, whatever `now` the claimer passes', async () => {
    const store = await storeWithDueOp();
    try {
      const before = await dbNow();
      // A claimer whose clock is an hour behind.
      const [claim] = await store.claimDue(1, 5_000, 'slow-clock', Date.now() - HOUR);
      const after = await dbNow();
      expect(claim).toBeDefined();
      expect(claim!.leaseExpiresAt).toBeGreaterThanOrEqual(Math.floor(before) + 5_000);
      expect(claim!.leaseExpiresAt).toBeLessThanOrEqual(Math.ceil(after) + 5_000);
      expect((await store.get('op-1'))?.leaseExpiresAt).toBe(claim!.leaseExpiresAt);
      const [event] = (await store.events('op-1')).slice(-1);
      expect(event).toMatchObject({ type: 'claimed', detail: { leaseExpiresAt: claim!.leaseExpiresAt } });
    } finally {
      await store.close();
    }
  });

  it('a claimer an hour ahead cannot steal a live lease; in caller mode it can', async () => {
    const db = await storeWithDueOp();
    const caller = await storeWithDueOp('caller');
    try {
      for (const store of [db, caller]) {
        const [held] = await store.claimDue(1, 60_000, 'honest', Date.now());
        expect(held?.record.leaseOwner).toBe('honest');
      }
      expect(await db.claimDue(1, 60_000, 'fast-clock', Date.now() + HOUR)).toEqual([]);
      expect((await db.get('op-1'))?.leaseOwner).toBe('honest');
      // The same skew under caller clocks: the live lease looks lapsed and is taken.
      const [stolen] = await caller.claimDue(1, 60_000, 'fast-clock', Date.now() + HOUR);
      expect(stolen?.record.leaseOwner).toBe('fast-clock');
    } finally {
      await db.close();
      await caller.close();
    }
  });

  it('a lease that lapsed on the server clock is claimable by a claimer whose clock is behind', async () => {
    const store = await storeWithDueOp();
    try {
      const [first] = await store.claimDue(1, 300, 'first', Date.now());
      expect(first).toBeDefined();
      // Live on the server clock: nobody takes it, however far behind or ahead they are.
      expect(await store.claimDue(1, 300, 'behind', Date.now() - HOUR)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 350));
      const [second] = await store.claimDue(1, 300, 'behind', Date.now() - HOUR);
      expect(second?.record.leaseOwner).toBe('behind');
      expect(second!.leaseExpiresAt).toBeGreaterThanOrEqual(first!.leaseExpiresAt + 300);
    } finally {
      await store.close();
    }
  });

  it('renewLease extends from the server clock and refuses a superseded token', async () => {
    const store = await storeWithDueOp();
    try {
      const [claim] = await store.claimDue(1, 300, 'worker-a', Date.now());
      const before = await dbNow();
      // A renewing caller whose clock says 1970: the expiry still comes from the server.
      const renewed = await store.renewLease!('op-1', claim!.leaseToken, 10_000, 0);
      expect(renewed).toBeGreaterThanOrEqual(Math.floor(before) + 10_000);
      expect((await store.get('op-1'))?.leaseExpiresAt).toBe(renewed);
      // Renewed, the lease outlives its first 300 ms.
      await new Promise((resolve) => setTimeout(resolve, 350));
      expect(await store.claimDue(1, 300, 'worker-b', Date.now())).toEqual([]);
      expect(await store.renewLease!('op-1', 'not-the-token', 10_000, Date.now())).toBeNull();
    } finally {
      await store.close();
    }
  });
});
