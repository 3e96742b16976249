import { strict as assert } from 'node:assert';
import type { OperationStore } from '../store/types.js';
import { claimsCases } from './conformance/claims.js';
import { isolationCases } from './conformance/isolation.js';
import { listingCases } from './conformance/listing.js';
import { reserveCases } from './conformance/reserve.js';
import { retentionCases } from './conformance/retention.js';
import { type CaseBody, ev, move, reserve, T0 } from './conformance/support.js';
import { transitionCases } from './conformance/transition.js';
import { valueCases } from './conformance/values.js';

/** One named, self-contained check of an `OperationStore`; `run` rejects when the store breaks the contract. */
export interface ConformanceCase {
  name: string;
  run(): Promise<void>;
}

/** Builds the conformance cases every `OperationStore` backend must pass; each case opens and closes its own store. */
export function storeConformance(
  makeStore: () => OperationStore | Promise<OperationStore>,
): ConformanceCase[] {
  const test = ([name, body]: CaseBody): ConformanceCase => ({
    name,
    async run() {
      const store = await makeStore();
      try {
        await body(store);
      } catch (error) {
        // Report the contract failure, not a secondary error from closing a store in a bad state.
        await store.close().catch(() => undefined);
        throw error;
      }
      await store.close();
    },
  });

  return [
    ...reserveCases,
    ...transitionCases,
    ...listingCases,
    ...claimsCases,
    ...renewCases,
    ...isolationCases,
    ...valueCases,
    ...retentionCases,
  ].map(test);
}

/** The store's heartbeat, or a failed check saying the store has none. */
function renewOf(store: OperationStore): NonNullable<OperationStore['renewLease']> {
  assert.equal(typeof store.renewLease, 'function', 'the store must implement renewLease (heartbeats)');
  return store.renewLease!.bind(store);
}

// Lease heartbeats, on the caller's timeline (a store with a database lease clock runs these in its
// caller-clock mode; its own tests cover the database clock).
const renewCases: CaseBody[] = [
  [
    'renewLease extends a live lease under its token, never shortens it, and appends no event',
    async (store) => {
      const renew = renewOf(store);
      await reserve(store, 1);
      await move(store, 'op-1', 'running', T0 + 1, { nextPollAt: T0 + 10 });
      const [claim] = await store.claimDue(1, 1_000, 'worker-a', T0 + 10);
      assert.ok(claim);
      const logged = (await store.events('op-1')).length;

      assert.equal(await renew('op-1', claim.leaseToken, 1_000, T0 + 500), T0 + 1_500);
      const renewed = await store.get('op-1');
      assert.equal(renewed?.leaseExpiresAt, T0 + 1_500);
      assert.equal(renewed?.leaseToken, claim.leaseToken);
      assert.equal(renewed?.leaseOwner, 'worker-a');
      // A renewal asking for less than the lease already has keeps the later expiry.
      assert.equal(await renew('op-1', claim.leaseToken, 100, T0 + 600), T0 + 1_500);
      assert.equal((await store.events('op-1')).length, logged);

      // The renewed lease is live past the original expiry, then lapses at the new one.
      assert.deepEqual(await store.claimDue(1, 1_000, 'worker-b', T0 + 1_400), []);
      const [taken] = await store.claimDue(1, 1_000, 'worker-b', T0 + 1_500);
      assert.equal(taken?.record.leaseOwner, 'worker-b');
    },
  ],

  [
    'renewLease changes nothing for another token, a superseded lease, a settled record or a missing one',
    async (store) => {
      const renew = renewOf(store);
      await reserve(store, 1);
      await move(store, 'op-1', 'running', T0 + 1, { nextPollAt: T0 + 10 });
      const [first] = await store.claimDue(1, 1_000, 'worker-a', T0 + 10);
      assert.ok(first);
      assert.equal(await renew('op-1', 'not-a-token', 1_000, T0 + 20), null);
      assert.equal((await store.get('op-1'))?.leaseExpiresAt, first.leaseExpiresAt);

      // The lease lapses and worker-b claims the record: worker-a is now a zombie.
      const [second] = await store.claimDue(1, 1_000, 'worker-b', first.leaseExpiresAt);
      assert.ok(second);
      assert.equal(await renew('op-1', first.leaseToken, 5_000, first.leaseExpiresAt + 1), null);
      const held = await store.get('op-1');
      assert.equal(held?.leaseToken, second.leaseToken);
      assert.equal(held?.leaseExpiresAt, second.leaseExpiresAt);

      // Settled is terminal, even for the token that settled it (here the lease fields were kept).
      const settled = await store.transition(
        'op-1',
        ['running'],
        { lifecycle: 'settled', status: 'verified' },
        ev('settled', second.leaseExpiresAt - 1),
        { leaseToken: second.leaseToken },
      );
      assert.equal(settled?.leaseToken, second.leaseToken);
      assert.equal(await renew('op-1', second.leaseToken, 5_000, second.leaseExpiresAt - 1), null);
      assert.equal((await store.get('op-1'))?.leaseExpiresAt, second.leaseExpiresAt);
      assert.equal(await renew('op-404', second.leaseToken, 1_000, T0), null);
    },
  ],
];
