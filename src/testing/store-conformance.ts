import { strict as assert } from 'node:assert';
import {
  type Lifecycle,
  type NewEvent,
  type NewOperation,
  OPEN_LIFECYCLES,
  type OperationRecord,
  type OperationStore,
  RECORD_SCHEMA_VERSION,
} from '../store/types.js';

/** One named, self-contained check of an `OperationStore`; `run` rejects when the store breaks the contract. */
export interface ConformanceCase {
  name: string;
  run(): Promise<void>;
}

type Patch = Parameters<OperationStore['transition']>[2];

const T0 = 1_700_000_000_000;
const ALL: Lifecycle[] = [...OPEN_LIFECYCLES, 'settled'];

function newOp(n: string | number, overrides: Partial<NewOperation> = {}): NewOperation {
  return {
    id: `op-${n}`,
    action: 'ticket.resolve',
    target: `ticket:T-${n}`,
    scope: { tenant: 'acme' },
    fingerprint: `fp-${n}`,
    idempotencyKey: `key-${n}`,
    runId: 'run-1',
    actor: 'agent',
    input: { id: `T-${n}`, status: 'resolved', tags: ['billing'] },
    requestedAt: T0,
    ...overrides,
  };
}

function ev(type: string, at = T0, extra: Partial<NewEvent> = {}): NewEvent {
  return { at, type, from: null, to: null, status: null, actor: 'agent', attempt: 0, ...extra };
}

async function reserve(store: OperationStore, n: string | number, overrides: Partial<NewOperation> = {}) {
  const { record, created } = await store.reserve(newOp(n, overrides), ev('reserved', overrides.requestedAt));
  assert.equal(created, true, `reserve ${n} should create a record`);
  return record;
}

/** Moves a record into `lifecycle` from wherever it is, asserting the move applied. */
async function move(store: OperationStore, id: string, lifecycle: Lifecycle, at: number, patch: Patch = {}) {
  const record = await store.transition(id, ALL, { lifecycle, ...patch }, ev(lifecycle, at));
  assert.ok(record, `transition of ${id} to ${lifecycle} should apply`);
  return record;
}

async function rejectsWith(call: () => Promise<unknown>, code: string, what: string): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    const e = error as { name?: unknown; code?: unknown };
    assert.equal(e.name, 'ReadbackError', `${what}: expected a ReadbackError, got ${String(error)}`);
    assert.equal(e.code, code, `${what}: wrong error code`);
    return true;
  });
}

/** Builds the conformance cases every `OperationStore` backend must pass; each case opens and closes its own store. */
export function storeConformance(
  makeStore: () => OperationStore | Promise<OperationStore>,
): ConformanceCase[] {
  const test = (name: string, body: (store: OperationStore) => Promise<void>): ConformanceCase => ({
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
    test('reserve creates a requested record carrying the schema version', async (store) => {
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
    }),

    test('reserve logs its event as seq 1', async (store) => {
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
    }),

    test('reserve with an existing key returns the stored record without a new event', async (store) => {
      await reserve(store, 1);
      const executing = await move(store, 'op-1', 'executing', T0 + 5, { attempt: 1, executedAt: T0 + 5 });
      const again = await store.reserve(newOp('other', { idempotencyKey: 'key-1' }), ev('reserved', T0 + 9));
      assert.equal(again.created, false);
      assert.deepEqual(again.record, executing);
      assert.equal(await store.get('op-other'), null);
      assert.equal((await store.events('op-1')).length, 2);
      assert.deepEqual(await store.events('op-other'), []);
    }),

    test('concurrent reserves with one key create exactly one record', async (store) => {
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
    }),

    test('reserve refuses an id already used under another key', async (store) => {
      await reserve(store, 1);
      await rejectsWith(
        () => store.reserve(newOp(1, { idempotencyKey: 'key-2' }), ev('reserved')),
        'store_conflict',
        'reserve with a reused id',
      );
      assert.equal(await store.getByKey('key-2'), null);
      assert.equal((await store.events('op-1')).length, 1);
    }),

    test('transition applies the patch and logs from/to when the lifecycle is in from', async (store) => {
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
    }),

    test('transition with a wrong from, or on an unknown id, returns null and logs nothing', async (store) => {
      const before = await reserve(store, 1);
      const patch: Patch = { lifecycle: 'settled', status: 'verified' };
      assert.equal(await store.transition('op-1', ['executing', 'running'], patch, ev('x', T0 + 1)), null);
      assert.equal(await store.transition('op-1', [], patch, ev('x', T0 + 1)), null);
      assert.equal(await store.transition('op-missing', ALL, patch, ev('x', T0 + 1)), null);
      assert.deepEqual(await store.get('op-1'), before);
      assert.equal((await store.events('op-1')).length, 1);
      assert.deepEqual(await store.events('op-missing'), []);
    }),

    test('a settled record never changes', async (store) => {
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
    }),

    test('statuses only move forward: a stale writer cannot rewrite a later state', async (store) => {
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
    }),

    test('concurrent transitions from one state: exactly one wins', async (store) => {
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
    }),

    test('transition refuses to change identity fields', async (store) => {
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
    }),

    test('the event log is append-only, ordered and filled by the store', async (store) => {
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
    }),

    test('list filters by status, with null matching records without one', async (store) => {
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
    }),

    test('list filters by lifecycle, action and runId', async (store) => {
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
    }),

    test('list filters by due time, orders by requestedAt then id, and honours limit', async (store) => {
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
    }),

    test('claimDue leases due records in nextPollAt order with fresh tokens', async (store) => {
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
    }),

    test('claimDue skips records not due, awaiting approval, settled or under a live lease', async (store) => {
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
    }),

    test('two owners never both hold a live lease on one record', async (store) => {
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
    }),

    test('a lapsed lease can be re-claimed and the old token can no longer write', async (store) => {
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
    }),

    test('a lease token guards only the writes that present one', async (store) => {
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
    }),

    test('records and events are deep copies in both directions', async (store) => {
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
    }),

    test('misuse is rejected with invalid_options', async (store) => {
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
    }),

    test('after close every method rejects with store_closed, and close is idempotent', async (store) => {
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
    }),
  ];
}
