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

  [
    'reserve with a start either applies it in the same write, as the transition would, or leaves it to the caller',
    async (store) => {
      const patch = {
        lifecycle: 'executing' as const,
        attempt: 1,
        executedAt: T0 + 1,
        nextPollAt: T0 + 60_000,
      };
      const started = (id: string) =>
        ev('executing', T0 + 1, { from: 'requested', to: 'executing', attempt: 1, detail: { op: id } });
      // The reference: the same operation under another id and key, its first move made as its own transition.
      const { id: _id, idempotencyKey: _key, ...shape } = newOp(2);
      await reserve(store, 1, shape);
      const moved = await store.transition('op-1', ['requested'], patch, started('op-1'), { attempt: 0 });
      assert.ok(moved);

      const { record, created } = await store.reserve(newOp(2), ev('reserved'), {
        patch,
        event: started('op-2'),
      });
      assert.equal(created, true);
      const same = (r: OperationRecord, n: number) => ({ ...r, id: `op-${n}`, idempotencyKey: `key-${n}` });
      if (record.lifecycle === 'requested') {
        // Not applied: the record is as a plain reserve makes it, and the caller's transition still applies.
        assert.deepEqual(same(record, 1), same((await store.get('op-2'))!, 1));
        assert.equal((await store.events('op-2')).length, 1);
        const later = await store.transition('op-2', ['requested'], patch, started('op-2'), { attempt: 0 });
        assert.deepEqual(same(later!, 1), moved);
      } else {
        assert.deepEqual(same(record, 1), moved);
        assert.deepEqual(same((await store.get('op-2'))!, 1), moved);
        const events = (await store.events('op-2')).map((e) => ({ ...e, operationId: 'op-1' }));
        const reference = (await store.events('op-1')).map((e) =>
          e.type === 'executing' ? { ...e, detail: { op: 'op-2' } } : e,
        );
        assert.deepEqual(events, reference);
      }

      // A repeat finds the record and applies nothing, start or not.
      const settledAt = (await store.events('op-2')).length;
      const again = await store.reserve(newOp('other', { idempotencyKey: 'key-2' }), ev('reserved', T0 + 9), {
        patch: { ...patch, attempt: 5 },
        event: started('op-other'),
      });
      assert.equal(again.created, false);
      assert.equal(again.record.id, 'op-2');
      assert.deepEqual(again.record, await store.get('op-2'));
      assert.equal((await store.events('op-2')).length, settledAt);
      assert.equal(await store.get('op-other'), null);
    },
  ],

  [
    'plain and started reserves made at once each keep their own record and events, and later seqs follow on',
    async (store) => {
      const start = (n: number) => ({
        patch: { lifecycle: 'executing' as const, attempt: 1, executedAt: T0 + 1, updatedAt: T0 + 1 },
        event: ev('executing', T0 + 1, { from: 'requested', to: 'executing', attempt: 1, detail: { n } }),
      });
      // Made in one turn, so a store that batches writes gets them together.
      const results = await Promise.all(
        [0, 1, 2, 3].map((n) => store.reserve(newOp(n), ev('reserved'), n % 2 === 0 ? start(n) : undefined)),
      );
      const trail = async (id: string) =>
        (await store.events(id)).map(
          (e) => `${e.seq}:${e.type}:${e.from ?? '-'}>${e.to ?? '-'}@${e.attempt}`,
        );
      for (const [n, { record, created }] of results.entries()) {
        assert.equal(created, true);
        assert.deepEqual(await store.get(record.id), record, `op-${n}: what the reserve answered is stored`);
      }
      // A store that leaves starts to its caller has the started ones still requested, with one event each.
      const applied = results[0]!.record.lifecycle === 'executing';
      if (applied) assert.deepEqual((await store.events('op-2')).at(-1)?.detail, { n: 2 });
      await Promise.all(
        results.map(({ record }) =>
          store.transition(record.id, [record.lifecycle], { reads: 1 }, ev('observed', T0 + 2)),
        ),
      );
      assert.deepEqual(
        await trail('op-0'),
        applied
          ? [
              '1:reserved:->requested@0',
              '2:executing:requested>executing@1',
              '3:observed:executing>executing@0',
            ]
          : ['1:reserved:->requested@0', '2:observed:requested>requested@0'],
      );
      assert.deepEqual(await trail('op-1'), ['1:reserved:->requested@0', '2:observed:requested>requested@0']);
    },
  ],

  [
    'a start a store applies is checked like a transition: a refused one leaves no record',
    async (store) => {
      const probe = await store.reserve(newOp(1), ev('reserved'), {
        patch: { lifecycle: 'executing', attempt: 1 },
        event: ev('executing', T0, { from: 'requested', to: 'executing', attempt: 1 }),
      });
      // A store that leaves starts to its caller checks nothing of them.
      if (probe.record.lifecycle === 'requested') return;
      await rejectsWith(
        () =>
          store.reserve(newOp(2), ev('reserved'), {
            patch: { lifecycle: 'nowhere' as never },
            event: ev('executing', T0, { attempt: 1 }),
          }),
        'invalid_options',
        'a start to an unknown lifecycle',
      );
      await rejectsWith(
        () =>
          store.reserve(newOp(3), ev('reserved'), {
            patch: { lifecycle: 'executing', idempotencyKey: 'key-other' } as never,
            event: ev('executing', T0, { attempt: 1 }),
          }),
        'store_conflict',
        'a start that changes the idempotency key',
      );
      assert.equal(await store.get('op-2'), null);
      assert.equal(await store.get('op-3'), null);
      assert.equal(await store.getByKey('key-3'), null);
      assert.deepEqual(await store.events('op-3'), []);
    },
  ],
];
