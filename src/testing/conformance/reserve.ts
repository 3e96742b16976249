import { strict as assert } from 'node:assert';
import { type OperationRecord, RECORD_SCHEMA_VERSION } from '../../store/types.js';
import { type CaseBody, ev, move, newOp, rejectsWith, reserve, T0 } from './support.js';

/** Reserve and idempotency-key semantics. */
export const reserveCases: CaseBody[] = [
  [
    'reserve creates a requested record carrying the schema version',
    async (store) => {
      const op = newOp(1);
      const { record, created } = await store.reserve(op, ev('reserved'));
      assert.equal(created, true);
      const expected: OperationRecord = {
        schemaVersion: RECORD_SCHEMA_VERSION,
        ...op,
        attempt: 0,
        lifecycle: 'requested',
        status: null,
        updatedAt: op.requestedAt,
        executedAt: null,
        inFlightUntil: null,
        acceptedAt: null,
        lastObservedAt: null,
        nextPollAt: null,
        reads: 0,
        providerRef: null,
        baseline: null,
        completion: null,
        leaseOwner: null,
        leaseToken: null,
        leaseExpiresAt: null,
      };
      assert.deepEqual(record, expected);
      assert.deepEqual(await store.get('op-1'), expected);
      assert.deepEqual(await store.getByKey('key-1'), expected);
      assert.equal(await store.get('op-missing'), null);
      assert.equal(await store.getByKey('key-missing'), null);
    },
  ],

  [
    'reserve logs its event as seq 1',
    async (store) => {
      await store.reserve(newOp(1), ev('reserved', T0, { detail: { via: 'run' } }));
      assert.deepEqual(await store.events('op-1'), [
        {
          schemaVersion: RECORD_SCHEMA_VERSION,
          operationId: 'op-1',
          seq: 1,
          at: T0,
          type: 'reserved',
          from: null,
          to: 'requested',
          status: null,
          actor: 'agent',
          attempt: 0,
          detail: { via: 'run' },
        },
      ]);
    },
  ],

  [
    'reserve with an existing key returns the stored record without a new event',
    async (store) => {
      await reserve(store, 1);
      const executing = await move(store, 'op-1', 'executing', T0 + 5, { attempt: 1, executedAt: T0 + 5 });
      const again = await store.reserve(newOp('other', { idempotencyKey: 'key-1' }), ev('reserved', T0 + 9));
      assert.equal(again.created, false);
      assert.deepEqual(again.record, executing);
      assert.equal(await store.get('op-other'), null);
      assert.equal((await store.events('op-1')).length, 2);
      assert.deepEqual(await store.events('op-other'), []);
    },
  ],

  [
    'concurrent reserves with one key create exactly one record',
    async (store) => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          store.reserve(newOp(`race-${i}`, { idempotencyKey: 'key-race' }), ev('reserved')),
        ),
      );
      assert.equal(results.filter((r) => r.created).length, 1);
      const ids = new Set(results.map((r) => r.record.id));
      assert.equal(ids.size, 1);
      assert.equal((await store.list()).length, 1);
      assert.equal((await store.events([...ids][0]!)).length, 1);
    },
  ],

  [
    'reserve refuses an id already used under another key',
    async (store) => {
      await reserve(store, 1);
      await rejectsWith(
        () => store.reserve(newOp(1, { idempotencyKey: 'key-2' }), ev('reserved')),
        'store_conflict',
        'reserve with a reused id',
      );
      assert.equal(await store.getByKey('key-2'), null);
      assert.equal((await store.events('op-1')).length, 1);
    },
  ],
];
