// pruneSettled: a whole retention sweep over store.prune, batch by batch with pauses between them.
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/store/memory.js';
import { pruneSettled } from '../../src/store/prune.js';
import type { OperationStore, PruneOptions } from '../../src/store/types.js';
import { ev, newOp, T0 } from '../../src/testing/conformance/support.js';

async function storeWithSettled(n: number): Promise<OperationStore> {
  const store = memoryStore();
  for (let i = 0; i < n; i++) {
    await store.reserve(newOp(i), ev('reserved'));
    await store.transition(
      `op-${i}`,
      ['requested'],
      { lifecycle: 'settled', status: 'verified' },
      ev('s', T0 + 1),
    );
  }
  // One still open, however old: a sweep never takes it.
  await store.reserve(newOp('open'), ev('reserved'));
  return store;
}

/** The store with each prune call's options and start time recorded. */
function recorded(store: OperationStore) {
  const calls: { options: PruneOptions; at: number }[] = [];
  const wrapped: OperationStore = {
    ...store,
    prune: (options) => {
      calls.push({ options: { ...options }, at: Date.now() });
      return store.prune!(options);
    },
  };
  return { wrapped, calls };
}

describe('pruneSettled', () => {
  it('deletes every eligible operation in batches, pausing between them, and stops after a short batch', async () => {
    const store = await storeWithSettled(7);
    const { wrapped, calls } = recorded(store);
    const batches: [number, number][] = [];
    const sweep = await pruneSettled(wrapped, {
      settledBefore: T0 + 2,
      limit: 3,
      onBatch: (deleted, total) => batches.push([deleted, total]),
    });
    expect(sweep).toEqual({ deleted: 7, aborted: false });
    expect(batches).toEqual([
      [3, 3],
      [3, 6],
      [1, 7],
    ]);
    expect(calls.map((c) => c.options)).toEqual(Array(3).fill({ settledBefore: T0 + 2, limit: 3 }));
    // A pause of at least 20 ms after each full batch: other writers get the store in between.
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.at - calls[i - 1]!.at).toBeGreaterThanOrEqual(19);
    expect((await store.list()).map((r) => r.id)).toEqual(['op-open']);
  });

  it('stops between batches when its signal aborts; what it deleted stays deleted', async () => {
    const store = await storeWithSettled(6);
    const controller = new AbortController();
    const sweep = await pruneSettled(store, {
      settledBefore: T0 + 2,
      limit: 2,
      signal: controller.signal,
      // Aborted during the pause after the first batch: the sweep ends there, without a second.
      onBatch: () => setTimeout(() => controller.abort(), 5),
    });
    expect(sweep).toEqual({ deleted: 2, aborted: true });
    expect(await store.list()).toHaveLength(5);
  });

  it('refuses a store without prune, bad options, and a count the store could not have deleted', async () => {
    const store = await storeWithSettled(2);
    const { prune: _, ...without } = store;
    await expect(pruneSettled(without as OperationStore, { settledBefore: T0 + 2 })).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'store',
    });
    await expect(pruneSettled(store, { settledBefore: T0 + 2, limit: 0 })).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'options.limit',
    });
    const lying: OperationStore = { ...store, prune: async () => 5 };
    await expect(pruneSettled(lying, { settledBefore: T0 + 2, limit: 3 })).rejects.toMatchObject({
      code: 'store_conflict',
    });
    expect(await store.list()).toHaveLength(3);
  });
});
