import { strict as assert } from 'node:assert';
import { ALL, type CaseBody, ev, move, newOp, type Patch, rejectsWith, reserve, T0 } from './support.js';

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
    'the records reserve and transition return hold their JSON fields as a read does, shared with no argument',
    async (store) => {
      const op = newOp(1, {
        input: { id: 'T-1', note: 'said “done”, ünïcode ✓', n: [1, 2.5, -0.125], deep: { a: null } },
      });
      const { record } = await store.reserve(op, ev('reserved'));
      assert.deepEqual(record, await store.get('op-1'));
      assert.notEqual(record.input, op.input);
      assert.notEqual(record.scope, op.scope);
      // Every JSON field at once, with nesting, non-ASCII text and numbers of every kind JSON keeps.
      const patch = {
        scope: { tenant: 'acme', region: 'eu' },
        input: { id: 'T-1', status: 'closed' },
        providerRef: { jobId: 'job-1', attempts: [1, 2], meta: { 'key with space': '“quoted”' } },
        baseline: { status: 'open', version: 7, tags: [] },
        completion: {
          status: 'verified',
          message: 'Verified: “The ticket is closed.” holds.',
          checks: [{ name: 'status', pass: true, expected: 'closed', observed: 'closed' }],
          evidence: { status: 'closed', ratio: 0.1, big: 1e21, tiny: 5e-324 },
        },
      };
      const moved = await move(store, 'op-1', 'running', T0 + 1, patch as unknown as Patch);
      assert.deepEqual(moved, await store.get('op-1'));
      for (const field of ['scope', 'input', 'providerRef', 'baseline', 'completion'] as const) {
        assert.deepEqual(moved[field], patch[field], field);
        assert.notEqual(moved[field], patch[field], `${field} must be a copy`);
      }
      // Changing the patch afterwards changes neither the returned record nor the stored one.
      patch.providerRef.attempts.push(3);
      patch.completion.checks[0]!.pass = false;
      assert.deepEqual((moved.providerRef as { attempts: number[] }).attempts, [1, 2]);
      assert.equal((moved.completion as { checks: { pass: boolean }[] }).checks[0]!.pass, true);
      assert.deepEqual(moved, await store.get('op-1'));
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
        [
          'claimDue actions not an array',
          () => store.claimDue(1, 1_000, 'w', T0, { actions: 'send' as never }),
        ],
        ['claimDue empty action name', () => store.claimDue(1, 1_000, 'w', T0, { actions: ['send', ''] })],
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
