import { strict as assert } from 'node:assert';
import { RECORD_SCHEMA_VERSION } from '../../store/types.js';
import { ALL, type CaseBody, ev, move, type Patch, rejectsWith, reserve, T0 } from './support.js';

/** Compare-and-set transitions and the append-only event log. */
export const transitionCases: CaseBody[] = [
  [
    'transition applies the patch and logs from/to when the lifecycle is in from',
    async (store) => {
      await reserve(store, 1);
      const patch: Patch = { lifecycle: 'executing', attempt: 1, executedAt: T0 + 10 };
      const next = await store.transition(
        'op-1',
        ['requested', 'awaiting_approval'],
        patch,
        ev('x', T0 + 10),
      );
      assert.ok(next);
      assert.equal(next.lifecycle, 'executing');
      assert.equal(next.attempt, 1);
      assert.equal(next.executedAt, T0 + 10);
      assert.equal(next.updatedAt, T0 + 10);
      assert.deepEqual(await store.get('op-1'), next);
      const events = await store.events('op-1');
      assert.equal(events.length, 2);
      assert.equal(events[1]!.seq, 2);
      assert.equal(events[1]!.from, 'requested');
      assert.equal(events[1]!.to, 'executing');
    },
  ],

  [
    'transition with a wrong from, or on an unknown id, returns null and logs nothing',
    async (store) => {
      const before = await reserve(store, 1);
      const patch: Patch = { lifecycle: 'settled', status: 'verified' };
      assert.equal(await store.transition('op-1', ['executing', 'running'], patch, ev('x', T0 + 1)), null);
      assert.equal(await store.transition('op-1', [], patch, ev('x', T0 + 1)), null);
      assert.equal(await store.transition('op-missing', ALL, patch, ev('x', T0 + 1)), null);
      assert.deepEqual(await store.get('op-1'), before);
      assert.equal((await store.events('op-1')).length, 1);
      assert.deepEqual(await store.events('op-missing'), []);
    },
  ],

  [
    'a settled record never changes',
    async (store) => {
      await reserve(store, 1);
      const settled = await move(store, 'op-1', 'settled', T0 + 5, { status: 'verified' });
      const again = await store.transition(
        'op-1',
        ALL,
        { status: 'failed', lifecycle: 'running' },
        ev('x', T0 + 6),
      );
      assert.equal(again, null);
      assert.equal(await store.transition('op-1', ['settled'], { reads: 9 }, ev('x', T0 + 7)), null);
      assert.deepEqual(await store.get('op-1'), settled);
      assert.equal((await store.events('op-1')).length, 2);
    },
  ],

  [
    'statuses only move forward: a stale writer cannot rewrite a later state',
    async (store) => {
      await reserve(store, 1);
      await move(store, 'op-1', 'executing', T0 + 1);
      await move(store, 'op-1', 'accepted', T0 + 2, { status: 'pending', acceptedAt: T0 + 2 });
      // A writer that last saw `executing` tries to record a failure after the work was accepted.
      const stale: Patch = { lifecycle: 'settled', status: 'failed' };
      assert.equal(await store.transition('op-1', ['executing'], stale, ev('x', T0 + 3)), null);
      assert.equal(
        await store.transition('op-1', ['requested'], { lifecycle: 'requested' }, ev('x', T0 + 3)),
        null,
      );
      const done = await store.transition('op-1', ['accepted', 'running'], stale, ev('x', T0 + 4));
      assert.equal(done?.status, 'failed');
      assert.deepEqual(
        (await store.events('op-1')).map((e) => e.to),
        ['requested', 'executing', 'accepted', 'settled'],
      );
    },
  ],

  [
    'concurrent transitions from one state: exactly one wins',
    async (store) => {
      await reserve(store, 1);
      await move(store, 'op-1', 'executing', T0 + 1);
      const statuses = ['verified', 'failed', 'partial', 'unknown', 'no_op'] as const;
      const results = await Promise.all(
        statuses.map((status, i) =>
          store.transition('op-1', ['executing'], { lifecycle: 'settled', status }, ev(status, T0 + 2 + i)),
        ),
      );
      const winners = results.filter((r) => r !== null);
      assert.equal(winners.length, 1);
      assert.equal((await store.get('op-1'))?.status, winners[0]!.status);
      assert.equal((await store.events('op-1')).length, 3);
    },
  ],
  [
    'an attempt guard lets only the writer that saw the current attempt re-execute',
    async (store) => {
      await reserve(store, 1);
      await move(store, 'op-1', 'executing', T0 + 1, { attempt: 1 });
      // Two drivers both saw attempt 1 in `executing` and both try to start attempt 2: the lifecycle alone
      // cannot tell them apart, the attempt guard must.
      const retry = () =>
        store.transition('op-1', ['executing'], { attempt: 2 }, ev('executing', T0 + 2), { attempt: 1 });
      const [first, second] = await Promise.all([retry(), retry()]);
      assert.equal([first, second].filter((r) => r !== null).length, 1);
      assert.equal((await store.get('op-1'))?.attempt, 2);
      assert.equal(
        await store.transition('op-1', ['executing'], { attempt: 3 }, ev('executing', T0 + 3), {
          attempt: 1,
        }),
        null,
      );
      assert.equal((await store.events('op-1')).length, 3);
    },
  ],

  [
    'a status guard tells a record that left a lifecycle and came back from one that never left',
    async (store) => {
      await reserve(store, 1);
      // Parked for a reviewer and approved: `requested` again, now pending. A writer that saw the fresh record
      // (status null) must not match it; one that saw it pending does.
      await move(store, 'op-1', 'awaiting_approval', T0 + 1, { status: 'pending' });
      await move(store, 'op-1', 'requested', T0 + 2, { status: 'pending' });
      const park = (status: 'pending' | null) =>
        store.transition('op-1', ['requested'], { lifecycle: 'awaiting_approval' }, ev('status', T0 + 3), {
          status,
        });
      assert.equal(await park(null), null);
      assert.equal((await store.get('op-1'))?.lifecycle, 'requested');
      assert.equal((await park('pending'))?.lifecycle, 'awaiting_approval');
      assert.equal((await store.events('op-1')).length, 4);
    },
  ],

  [
    'transition refuses to change identity fields',
    async (store) => {
      const record = await reserve(store, 1);
      for (const field of ['id', 'idempotencyKey', 'fingerprint', 'schemaVersion'] as const) {
        const patch = {
          lifecycle: 'executing',
          [field]: field === 'schemaVersion' ? 99 : 'changed',
        } as Patch;
        await rejectsWith(
          () => store.transition('op-1', ['requested'], patch, ev('x', T0 + 1)),
          'store_conflict',
          `patch of ${field}`,
        );
      }
      assert.deepEqual(await store.get('op-1'), record);
      // Carrying the unchanged identity (a spread record) is not a change.
      const spread = await store.transition(
        'op-1',
        ['requested'],
        { ...record, lifecycle: 'executing' },
        ev('x'),
      );
      assert.equal(spread?.lifecycle, 'executing');
    },
  ],

  [
    'the event log is append-only, ordered and filled by the store',
    async (store) => {
      await reserve(store, 1);
      const first = await store.events('op-1');
      // The caller's from/to are ignored: the store records the change it actually made.
      await store.transition(
        'op-1',
        ['requested'],
        { lifecycle: 'executing' },
        ev('exec', T0 + 1, { from: 'running' }),
      );
      await store.transition('op-1', ['executing'], { lifecycle: 'running', reads: 1 }, ev('obs', T0 + 2));
      await store.transition('op-1', ['running'], { reads: 2 }, ev('obs', T0 + 3, { detail: { n: 2 } }));
      const events = await store.events('op-1');
      assert.deepEqual(events.slice(0, 1), first);
      assert.deepEqual(
        events.map((e) => [e.seq, e.type, e.from, e.to, e.at]),
        [
          [1, 'reserved', null, 'requested', T0],
          [2, 'exec', 'requested', 'executing', T0 + 1],
          [3, 'obs', 'executing', 'running', T0 + 2],
          [4, 'obs', 'running', 'running', T0 + 3],
        ],
      );
      assert.deepEqual(events[3]!.detail, { n: 2 });
      assert.ok(events.every((e) => e.schemaVersion === RECORD_SCHEMA_VERSION && e.operationId === 'op-1'));
    },
  ],
];
