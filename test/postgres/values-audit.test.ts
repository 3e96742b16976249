import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema } = await pgSuite();

describe.skipIf(!available)('postgresStore with values memory and SQLite keep', () => {
  const open = () => postgresStore({ connectionString: PG_URL, schema: tempSchema(), leaseClock: 'caller' });

  // A clock with sub-millisecond resolution, or a fractional contract duration (maxInFlightMs: 1000 / 3),
  // gives times with fractions; bigint columns refused them, so every write of such a runner failed.
  it('stores times with fractions of a millisecond, to the nearest millisecond', async () => {
    const store = await open();
    try {
      const { record } = await store.reserve(
        newOp(1, { requestedAt: T0 + 0.4, nextPollAt: T0 + 10.6 }),
        ev('reserved', T0 + 0.4),
      );
      expect(record.requestedAt).toBe(T0);
      expect(record.nextPollAt).toBe(T0 + 11);
      const moved = await store.transition(
        'op-1',
        ['requested'],
        { lifecycle: 'executing', attempt: 1, executedAt: T0 + 1.5, inFlightUntil: T0 + 334.33 },
        ev('executing', T0 + 1.2),
      );
      expect(moved?.executedAt).toBe(T0 + 2);
      expect(moved?.inFlightUntil).toBe(T0 + 334);
      expect(moved?.updatedAt).toBe(T0 + 1);
      expect((await store.events('op-1')).map((e) => e.at)).toEqual([T0, T0 + 1]);
      expect((await store.list({ dueBefore: T0 + 11.9 })).map((r) => r.id)).toEqual(['op-1']);
      expect(await store.list({ dueBefore: T0 + 10.9 })).toEqual([]);
      const [claim] = await store.claimDue(1, 1_000.5, 'worker', T0 + 11.2);
      expect(claim?.record.id).toBe('op-1');
      expect(await store.renewLease!('op-1', claim!.leaseToken, 2_000, T0 + 20.7)).toBe(T0 + 2_021);
    } finally {
      await store.close();
    }
  });

  // Memory and SQLite answer any limit; Postgres refused one past 2^31 - 1 with "out of range for type integer".
  it('lists and claims with a limit past the 32-bit range', async () => {
    const store = await open();
    try {
      await store.reserve(newOp(1, { nextPollAt: T0 }), ev('reserved'));
      expect((await store.list({ limit: 2 ** 31 })).map((r) => r.id)).toEqual(['op-1']);
      expect((await store.list({ limit: Number.MAX_SAFE_INTEGER })).length).toBe(1);
      expect((await store.claimDue(2 ** 40, 1_000, 'worker', T0)).length).toBe(1);
    } finally {
      await store.close();
    }
  });
});
