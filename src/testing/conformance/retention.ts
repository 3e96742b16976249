import { strict as assert } from 'node:assert';
import type { OperationStore } from '../../store/types.js';
import { type CaseBody, ev, move, newOp, reserve, T0 } from './support.js';

/** The store's retention, or a failed check saying the store has none. */
function pruneOf(store: OperationStore): NonNullable<OperationStore['prune']> {
  assert.equal(typeof store.prune, 'function', 'the store must implement prune (retention)');
  return store.prune!.bind(store);
}

const ids = async (store: OperationStore) => (await store.list()).map((r) => r.id);

async function rejectsWith(call: () => Promise<unknown>, field: string) {
  await assert.rejects(call, (error: { code?: unknown; field?: unknown }) => {
    assert.equal(error.code, 'invalid_options', `a bad ${field} is a misuse`);
    assert.equal(error.field, field);
    return true;
  });
}

/** Retention: settled operations older than a cutoff go with their events; nothing open ever does. */
export const retentionCases: CaseBody[] = [
  [
    'prune deletes settled operations requested and last changed before the cutoff, with their events, and nothing open',
    async (store) => {
      const prune = pruneOf(store);
      for (const n of [1, 2, 3, 4, 5, 6]) await reserve(store, n);
      await move(store, 'op-1', 'settled', T0 + 10, { status: 'verified' });
      await move(store, 'op-2', 'settled', T0 + 20, { status: 'failed' });
      // Settled at the cutoff itself: not before it, so it stays.
      await move(store, 'op-3', 'settled', T0 + 50, { status: 'verified' });
      // Open, however old: work a reconciler still owes, or a reviewer's decision still awaited.
      await move(store, 'op-4', 'accepted', T0 + 1, { status: 'pending' });
      await move(store, 'op-5', 'awaiting_approval', T0 + 1, { status: 'pending' });
      // Settled by a host whose clock ran behind the one that requested it: not requested before the cutoff.
      await reserve(store, 7, { requestedAt: T0 + 60 });
      await move(store, 'op-7', 'settled', T0 + 30, { status: 'verified' });

      assert.equal(await prune({ settledBefore: T0 + 50 }), 2);
      assert.deepEqual(await ids(store), ['op-3', 'op-4', 'op-5', 'op-6', 'op-7']);
      for (const id of ['op-1', 'op-2']) {
        assert.equal(await store.get(id), null, `${id} is deleted`);
        assert.deepEqual(await store.events(id), [], `${id}'s events are deleted`);
      }
      assert.equal(await store.getByKey('key-1'), null);
      assert.equal((await store.events('op-3')).length, 2);
      assert.equal((await store.events('op-4')).length, 2);
      // Nothing left to delete: a second call changes nothing.
      assert.equal(await prune({ settledBefore: T0 + 50 }), 0);
      assert.deepEqual(await ids(store), ['op-3', 'op-4', 'op-5', 'op-6', 'op-7']);
    },
  ],

  [
    'prune deletes at most limit operations per call, and repeated calls delete them all',
    async (store) => {
      const prune = pruneOf(store);
      for (const n of [1, 2, 3, 4, 5]) {
        await reserve(store, n);
        await move(store, `op-${n}`, 'settled', T0 + n, { status: 'verified' });
      }
      const counts: number[] = [];
      for (let call = 0; call < 4; call++) counts.push(await prune({ settledBefore: T0 + 100, limit: 2 }));
      assert.deepEqual(counts, [2, 2, 1, 0]);
      assert.deepEqual(await ids(store), []);
    },
  ],

  [
    "a pruned operation's idempotency key is free again: the same call reserves a new operation",
    async (store) => {
      const prune = pruneOf(store);
      await reserve(store, 1);
      await move(store, 'op-1', 'settled', T0 + 1, { status: 'verified' });
      assert.equal(await prune({ settledBefore: T0 + 2 }), 1);
      const again = await store.reserve(newOp('1b', { idempotencyKey: 'key-1' }), ev('reserved', T0 + 3));
      assert.equal(again.created, true);
      assert.equal(again.record.id, 'op-1b');
      assert.equal((await store.events('op-1b')).length, 1);
    },
  ],

  [
    'prune refuses options it cannot honour, and deletes nothing then',
    async (store) => {
      const prune = pruneOf(store);
      await reserve(store, 1);
      await move(store, 'op-1', 'settled', T0 + 1, { status: 'verified' });
      await rejectsWith(() => prune({ settledBefore: Number.NaN }), 'options.settledBefore');
      await rejectsWith(() => prune({ settledBefore: '2026' as never }), 'options.settledBefore');
      await rejectsWith(() => prune({ settledBefore: T0 + 9, limit: 0 }), 'options.limit');
      await rejectsWith(() => prune({ settledBefore: T0 + 9, limit: 1.5 }), 'options.limit');
      await rejectsWith(() => prune({ settledBefore: T0 + 9, limit: 10_001 }), 'options.limit');
      await rejectsWith(() => prune(undefined as never), 'options');
      assert.deepEqual(await ids(store), ['op-1']);
    },
  ],
];
