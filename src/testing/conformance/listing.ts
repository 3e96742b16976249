import { strict as assert } from 'node:assert';
import type { OperationRecord, OperationStore } from '../../store/types.js';
import { type CaseBody, move, reserve, T0 } from './support.js';

/** Listing by status, lifecycle, action, run and due time. */
export const listingCases: CaseBody[] = [
  [
    'list filters by status, with null matching records without one',
    async (store) => {
      await reserve(store, 1);
      await reserve(store, 2);
      await reserve(store, 3);
      await move(store, 'op-2', 'accepted', T0 + 1, { status: 'pending' });
      await move(store, 'op-3', 'settled', T0 + 1, { status: 'verified' });
      const ids = (records: OperationRecord[]) => records.map((r) => r.id);
      assert.deepEqual(ids(await store.list({ status: null })), ['op-1']);
      assert.deepEqual(ids(await store.list({ status: 'pending' })), ['op-2']);
      assert.deepEqual(ids(await store.list({ status: 'failed' })), []);
      assert.deepEqual(ids(await store.list({})), ['op-1', 'op-2', 'op-3']);
    },
  ],

  [
    'list filters by lifecycle, action and runId',
    async (store) => {
      await reserve(store, 1, { action: 'email.send', runId: 'run-a' });
      await reserve(store, 2, { action: 'ticket.resolve', runId: 'run-a' });
      await reserve(store, 3, { action: 'ticket.resolve', runId: 'run-b' });
      await move(store, 'op-2', 'running', T0 + 1);
      await move(store, 'op-3', 'settled', T0 + 1, { status: 'verified' });
      const ids = async (filter: Parameters<OperationStore['list']>[0]) =>
        (await store.list(filter)).map((r) => r.id);
      assert.deepEqual(await ids({ lifecycle: 'running' }), ['op-2']);
      assert.deepEqual(await ids({ lifecycle: ['requested', 'settled'] }), ['op-1', 'op-3']);
      assert.deepEqual(await ids({ action: 'ticket.resolve' }), ['op-2', 'op-3']);
      assert.deepEqual(await ids({ runId: 'run-a' }), ['op-1', 'op-2']);
      assert.deepEqual(await ids({ runId: 'run-a', action: 'ticket.resolve', lifecycle: 'running' }), [
        'op-2',
      ]);
      assert.deepEqual(await ids({ runId: 'run-a', lifecycle: 'settled' }), []);
    },
  ],

  [
    'list filters by due time, orders by requestedAt then id, and honours limit',
    async (store) => {
      await reserve(store, 'c', { requestedAt: T0 + 20 });
      await reserve(store, 'b', { requestedAt: T0 + 10 });
      await reserve(store, 'a', { requestedAt: T0 + 10 });
      await reserve(store, 'd', { requestedAt: T0 });
      await move(store, 'op-c', 'running', T0 + 30, { nextPollAt: T0 + 100 });
      await move(store, 'op-b', 'running', T0 + 30, { nextPollAt: T0 + 200 });
      await move(store, 'op-a', 'running', T0 + 30, { nextPollAt: T0 + 50 });
      const ids = async (filter?: Parameters<OperationStore['list']>[0]) =>
        (await store.list(filter)).map((r) => r.id);
      assert.deepEqual(await ids(), ['op-d', 'op-a', 'op-b', 'op-c']);
      assert.deepEqual(await ids({ dueBefore: T0 + 100 }), ['op-a', 'op-c']);
      assert.deepEqual(await ids({ dueBefore: T0 + 49 }), []);
      assert.deepEqual(await ids({ limit: 2 }), ['op-d', 'op-a']);
      assert.deepEqual(await ids({ dueBefore: T0 + 1000, limit: 1 }), ['op-a']);
    },
  ],
];
