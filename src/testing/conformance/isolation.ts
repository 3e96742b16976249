import { strict as assert } from 'node:assert';
import { ALL, type CaseBody, ev, move, newOp, rejectsWith, reserve, T0 } from './support.js';

/** Copies in and out, misuse and close. */
export const isolationCases: CaseBody[] = [
  [
    'records and events are deep copies in both directions',
    async (store) => {
      const op = newOp(1);
      const event = ev('reserved', T0, { detail: { nested: { n: 1 } } });
      const { record } = await store.reserve(op, event);
      (op.input as { tags: string[] }).tags.push('mutated');
      op.scope.tenant = 'mutated';
      (event.detail as { nested: { n: number } }).nested.n = 99;
      (record.input as { tags: string[] }).tags.push('mutated');
      record.scope.tenant = 'mutated';
      for (const read of [await store.get('op-1'), await store.getByKey('key-1')])
        read!.scope.tenant = 'mutated';
      const stored = await store.get('op-1');
      assert.deepEqual(stored?.input, { id: 'T-1', status: 'resolved', tags: ['billing'] });
      assert.deepEqual(stored?.scope, { tenant: 'acme' });
      const events = await store.events('op-1');
      assert.deepEqual(events[0]!.detail, { nested: { n: 1 } });
      (events[0]!.detail as { nested: { n: number } }).nested.n = 7;
      assert.deepEqual((await store.events('op-1'))[0]!.detail, { nested: { n: 1 } });

      const providerRef = { jobId: 'job-1' };
      const moved = await move(store, 'op-1', 'accepted', T0 + 1, { providerRef });
      providerRef.jobId = 'mutated';
      (moved.providerRef as { jobId: string }).jobId = 'mutated-too';
      const [listed] = await store.list();
      (listed!.providerRef as { jobId: string }).jobId = 'mutated-three';
      assert.deepEqual((await store.get('op-1'))?.providerRef, { jobId: 'job-1' });
    },
  ],

  [
    'misuse is rejected with invalid_options',
    async (store) => {
      const cases: [string, () => Promise<unknown>][] = [
        ['claimDue limit 0', () => store.claimDue(0, 1_000, 'w', T0)],
        ['claimDue limit 1.5', () => store.claimDue(1.5, 1_000, 'w', T0)],
        ['claimDue leaseMs 0', () => store.claimDue(1, 0, 'w', T0)],
        ['claimDue leaseMs -5', () => store.claimDue(1, -5, 'w', T0)],
        ['claimDue empty owner', () => store.claimDue(1, 1_000, '', T0)],
        ['list limit 0', () => store.list({ limit: 0 })],
        ['list limit -1', () => store.list({ limit: -1 })],
      ];
      for (const [what, call] of cases) await rejectsWith(call, 'invalid_options', what);
    },
  ],

  [
    'after close every method rejects with store_closed, and close is idempotent',
    async (store) => {
      await reserve(store, 1);
      await store.close();
      const calls: [string, () => Promise<unknown>][] = [
        ['reserve', () => store.reserve(newOp(2), ev('reserved'))],
        ['transition', () => store.transition('op-1', ALL, { reads: 1 }, ev('x'))],
        ['get', () => store.get('op-1')],
        ['getByKey', () => store.getByKey('key-1')],
        ['events', () => store.events('op-1')],
        ['list', () => store.list()],
        ['claimDue', () => store.claimDue(1, 1_000, 'w', T0)],
      ];
      for (const [what, call] of calls) await rejectsWith(call, 'store_closed', what);
      await store.close();
    },
  ],
];
