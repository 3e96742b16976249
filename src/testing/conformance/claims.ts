import { strict as assert } from 'node:assert';
import { type CaseBody, ev, move, type Patch, reserve, T0 } from './support.js';

/** Claims with lease tokens. */
export const claimsCases: CaseBody[] = [
  [
    'claimDue leases due records in nextPollAt order with fresh tokens',
    async (store) => {
      // Request order (3, 1, 2) differs from due order (2, 3, 1), so a store sorting by the wrong field fails.
      for (const [n, due, requested] of [
        [1, 30, 2],
        [2, 10, 3],
        [3, 20, 1],
      ] as const) {
        await reserve(store, n, { requestedAt: T0 + requested });
        await move(store, `op-${n}`, 'running', T0 + 5, { nextPollAt: T0 + due });
      }
      const now = T0 + 100;
      const claims = await store.claimDue(2, 1_000, 'worker-1', now);
      assert.deepEqual(
        claims.map((c) => c.record.id),
        ['op-2', 'op-3'],
      );
      assert.notEqual(claims[0]!.leaseToken, claims[1]!.leaseToken);
      for (const claim of claims) {
        assert.equal(typeof claim.leaseToken, 'string');
        assert.ok(claim.leaseToken.length > 0);
        assert.equal(claim.leaseExpiresAt, now + 1_000);
        assert.equal(claim.record.leaseOwner, 'worker-1');
        assert.equal(claim.record.leaseToken, claim.leaseToken);
        assert.equal(claim.record.leaseExpiresAt, now + 1_000);
        assert.equal(claim.record.lifecycle, 'running');
        assert.deepEqual(await store.get(claim.record.id), claim.record);
        const last = (await store.events(claim.record.id)).at(-1)!;
        assert.equal(last.type, 'claimed');
        assert.equal(last.seq, 3);
      }
      assert.equal((await store.get('op-1'))?.leaseOwner, null);
    },
  ],

  [
    'claimDue takes due records of every claimable lifecycle in (nextPollAt, requestedAt, id) order',
    async (store) => {
      // Ties in nextPollAt and requestedAt, lifecycles interleaved, ids that sort as text ('op-10' < 'op-2'),
      // and claims smaller than each lifecycle's share: a store must merge the lifecycles, not take one first.
      const lifecycles = ['requested', 'executing', 'accepted', 'running', 'timed_out'] as const;
      const due = [5, 5, 3, 3, 9, 1, 5, 3, 1, 9, 5, 7];
      const expected: { id: string; due: number; requested: number }[] = [];
      for (let n = 1; n <= due.length; n++) {
        const requested = (n * 7) % 4;
        await reserve(store, n, { requestedAt: T0 + requested });
        await move(store, `op-${n}`, lifecycles[n % lifecycles.length]!, T0 + 20, {
          nextPollAt: T0 + due[n - 1]!,
        });
        expected.push({ id: `op-${n}`, due: due[n - 1]!, requested });
      }
      expected.sort((a, b) => a.due - b.due || a.requested - b.requested || (a.id < b.id ? -1 : 1));
      const claimed: string[] = [];
      for (let round = 0; round < 6; round++) {
        const claims = await store.claimDue(3, 1_000, 'worker-1', T0 + 50);
        claimed.push(...claims.map((c) => c.record.id));
      }
      assert.deepEqual(
        claimed,
        expected.map((e) => e.id),
      );
    },
  ],

  [
    'claimDue skips records not due, awaiting approval, settled or under a live lease',
    async (store) => {
      for (const n of [1, 2, 3, 4, 5]) await reserve(store, n);
      await move(store, 'op-1', 'running', T0 + 1, { nextPollAt: T0 + 500 });
      await move(store, 'op-2', 'awaiting_approval', T0 + 1, { nextPollAt: T0 });
      await move(store, 'op-3', 'settled', T0 + 1, { nextPollAt: T0, status: 'verified' });
      await move(store, 'op-4', 'timed_out', T0 + 1, { nextPollAt: T0 + 100 });
      // op-5 stays requested with no nextPollAt: nothing has scheduled it.
      const now = T0 + 100;
      assert.deepEqual(
        (await store.claimDue(10, 1_000, 'worker-1', now)).map((c) => c.record.id),
        ['op-4'],
      );
      assert.deepEqual(await store.claimDue(10, 1_000, 'worker-2', now + 1), []);
      assert.equal((await store.events('op-2')).length, 2);
    },
  ],

  [
    'claimDue with actions leases only operations of those actions; the others stay claimable',
    async (store) => {
      for (const [n, action] of [
        [1, 'send_email'],
        [2, 'refund'],
        [3, 'send_email'],
        [4, 'close_ticket'],
      ] as const) {
        await reserve(store, n, { action });
        await move(store, `op-${n}`, 'running', T0 + 1, { nextPollAt: T0 + 10 * n });
      }
      const now = T0 + 100;
      const mine = await store.claimDue(10, 1_000, 'worker-1', now, {
        actions: ['send_email', 'unheard_of'],
      });
      assert.deepEqual(
        mine.map((c) => c.record.id),
        ['op-1', 'op-3'],
      );
      // Nothing else was leased or logged: another reconciler claims the rest at the same moment.
      for (const id of ['op-2', 'op-4']) {
        assert.equal((await store.get(id))?.leaseOwner, null);
        assert.equal((await store.events(id)).at(-1)!.type, 'running');
      }
      assert.deepEqual(await store.claimDue(10, 1_000, 'worker-2', now, { actions: [] }), []);
      assert.deepEqual(
        (await store.claimDue(10, 1_000, 'worker-2', now, { actions: ['refund', 'close_ticket'] })).map(
          (c) => c.record.id,
        ),
        ['op-2', 'op-4'],
      );
      // A name no store can hold as given matches nothing, and is not an error.
      assert.deepEqual(
        await store.claimDue(10, 1_000, 'worker-3', now + 5_000, { actions: ['bad\ud800'] }),
        [],
      );
      // Without the option, any action: all four, their leases having lapsed.
      assert.equal((await store.claimDue(10, 1_000, 'worker-3', now + 5_000)).length, 4);
    },
  ],

  [
    'an owner name the store cannot hold as given is refused before anything is leased, never changed',
    async (store) => {
      await reserve(store, 1);
      await move(store, 'op-1', 'running', T0 + 5, { nextPollAt: T0 + 10 });
      const owner = 'worker-\ud800';
      let claims: Awaited<ReturnType<typeof store.claimDue>> | undefined;
      try {
        claims = await store.claimDue(1, 1_000, owner, T0 + 100);
      } catch (error) {
        assert.equal((error as { name?: string }).name, 'ReadbackError');
      }
      const record = await store.get('op-1');
      if (claims === undefined) {
        // Refused: nothing was leased and nothing logged.
        assert.equal(record?.leaseOwner, null);
        assert.equal((await store.events('op-1')).at(-1)?.type, 'running');
      } else {
        // Kept: exactly as given, in the claim, the record and the event.
        assert.equal(claims[0]?.record.leaseOwner, owner);
        assert.equal(record?.leaseOwner, owner);
        assert.equal((await store.events('op-1')).at(-1)?.actor, owner);
      }
    },
  ],

  [
    'two owners never both hold a live lease on one record',
    async (store) => {
      for (const n of [1, 2, 3, 4]) {
        await reserve(store, n);
        await move(store, `op-${n}`, 'running', T0 + 1, { nextPollAt: T0 + 10 });
      }
      const now = T0 + 50;
      const [a, b] = await Promise.all([
        store.claimDue(10, 1_000, 'worker-a', now),
        store.claimDue(10, 1_000, 'worker-b', now),
      ]);
      const claimed = [...a, ...b].map((c) => c.record.id).sort();
      assert.deepEqual(claimed, ['op-1', 'op-2', 'op-3', 'op-4']);
      assert.deepEqual(await store.claimDue(10, 1_000, 'worker-c', now + 999), []);
    },
  ],

  [
    'a lapsed lease can be re-claimed and the old token can no longer write',
    async (store) => {
      await reserve(store, 1);
      await move(store, 'op-1', 'running', T0 + 1, { nextPollAt: T0 + 10 });
      const [first] = await store.claimDue(1, 1_000, 'worker-a', T0 + 10);
      assert.ok(first);
      const [second] = await store.claimDue(1, 1_000, 'worker-b', first.leaseExpiresAt);
      assert.ok(second, 'a lease is lapsed once now reaches leaseExpiresAt');
      assert.equal(second.record.leaseOwner, 'worker-b');
      assert.notEqual(second.leaseToken, first.leaseToken);
      const patch: Patch = { lifecycle: 'settled', status: 'verified' };
      const at = T0 + 2_000;
      assert.equal(
        await store.transition('op-1', ['running'], patch, ev('x', at), { leaseToken: first.leaseToken }),
        null,
      );
      assert.equal(
        await store.transition('op-1', ['running'], patch, ev('x', at), { leaseToken: 'not-a-token' }),
        null,
      );
      const done = await store.transition('op-1', ['running'], patch, ev('x', at), {
        leaseToken: second.leaseToken,
      });
      assert.equal(done?.status, 'verified');
      assert.deepEqual(
        (await store.events('op-1')).map((e) => e.type),
        ['reserved', 'running', 'claimed', 'claimed', 'x'],
      );
    },
  ],

  [
    'a lease token guards only the writes that present one',
    async (store) => {
      await reserve(store, 1);
      assert.equal(
        await store.transition('op-1', ['requested'], { reads: 1 }, ev('x'), { leaseToken: 'no-lease-yet' }),
        null,
      );
      await move(store, 'op-1', 'running', T0 + 1, { nextPollAt: T0 + 10 });
      const [claim] = await store.claimDue(1, 1_000, 'worker-a', T0 + 10);
      assert.ok(claim);
      const leased = await store.transition('op-1', ['running'], { reads: 1 }, ev('obs', T0 + 11), {
        leaseToken: claim.leaseToken,
      });
      assert.equal(leased?.reads, 1);
      assert.equal(leased?.leaseToken, claim.leaseToken);
      const foreground = await store.transition('op-1', ['running'], { reads: 2 }, ev('obs', T0 + 12));
      assert.equal(foreground?.reads, 2);
    },
  ],
];
