// Group commit on Postgres: the transitions of one event-loop turn go as one statement per shape. Each
// caller must get exactly what its own statement would have given it, against a real server: distinct
// and repeated operations, stale lease tokens mixed into a batch, a row that fails, lost connections.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { PgResult } from '../../src/postgres/driver.js';
import { postgresStore } from '../../src/postgres/index.js';
import { reconnectPolicy } from '../../src/postgres/retry.js';
import { migrate } from '../../src/postgres/schema.js';
import { tablesIn } from '../../src/postgres/sql.js';
import { createPostgresStore } from '../../src/postgres/store.js';
import type { OperationRecord, OperationStore } from '../../src/store/types.js';
import { ALL, ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { BATCHED, PG_URL, pgSuite, recordingPool, type Sent } from './support.js';

const { available, tempSchema, tempPool } = await pgSuite();

async function openStore(options: { groupCommit?: boolean; max?: number } = {}) {
  const schema = tempSchema();
  const real = tempPool(options.max ?? 4);
  const { db, sent } = recordingPool(real);
  const store = await postgresStore({ pool: db, schema, leaseClock: 'caller', ...options });
  sent.length = 0;
  return { store, sent, real, schema };
}

async function reserveMany(store: OperationStore, n: number, prefix = ''): Promise<OperationRecord[]> {
  return Promise.all(
    Array.from(
      { length: n },
      async (_, i) => (await store.reserve(newOp(`${prefix}${i}`), ev('reserved'))).record,
    ),
  );
}

const batches = (sent: Sent[]) => sent.filter((s) => s.batch !== undefined).map((s) => s.batch);
const singles = (sent: Sent[]) =>
  sent.filter((s) => s.batch === undefined && s.text.includes('UPDATE')).length;

describe.skipIf(!available)('postgres group commit', () => {
  it('sends the transitions of one turn on distinct operations as one statement, each with its own result', async () => {
    const { store, sent } = await openStore();
    const records = await reserveMany(store, 40);
    sent.length = 0;
    const moved = await Promise.all(
      records.map((r, i) =>
        store.transition(
          r.id,
          ['requested'],
          { lifecycle: 'executing', attempt: 1, executedAt: T0 + i },
          ev('exec', T0 + 100 + i, { detail: { i } }),
        ),
      ),
    );
    expect(batches(sent)).toEqual([40]);
    expect(singles(sent)).toBe(0);
    for (const [i, next] of moved.entries()) {
      expect(next).toMatchObject({ id: `op-${i}`, lifecycle: 'executing', attempt: 1, executedAt: T0 + i });
      expect(next!.updatedAt).toBe(T0 + 100 + i);
      expect(await store.get(`op-${i}`)).toEqual(next);
      const events = await store.events(`op-${i}`);
      expect(events.map((e) => [e.seq, e.type, e.from, e.to, e.at, e.detail])).toEqual([
        [1, 'reserved', null, 'requested', T0, undefined],
        [2, 'exec', 'requested', 'executing', T0 + 100 + i, { i }],
      ]);
    }
    await store.close();
  });

  it('a lone writer sends each transition within the call; writers that arrive together still share one', async () => {
    const { store, sent } = await openStore();
    const [a, b, c] = (await reserveMany(store, 3, 'lone-')) as [
      OperationRecord,
      OperationRecord,
      OperationRecord,
    ];
    const updates = () => sent.filter((s) => s.text.includes('UPDATE')).length;
    const toExecuting = (r: OperationRecord) =>
      store.transition(r.id, ['requested'], { lifecycle: 'executing', attempt: 1 }, ev('executing', T0 + 1));
    const toSettled = (r: OperationRecord) =>
      store.transition(
        r.id,
        ['executing'],
        { lifecycle: 'settled', status: 'verified' },
        ev('settled', T0 + 2),
      );

    // Nothing is known of the callers yet: the first transition waits a turn for company, as any would.
    sent.length = 0;
    const first = toExecuting(a);
    expect(updates()).toBe(0);
    expect((await first)?.lifecycle).toBe('executing');
    // The last statement held only this operation's write: the next one goes out within the call.
    sent.length = 0;
    const settle = toSettled(a);
    expect(updates()).toBe(1);
    expect((await settle)?.lifecycle).toBe('settled');
    // That write settled its operation, so the next operation's write continues the chain; a second
    // writer arriving while it is in flight breaks it and waits for the next flush.
    sent.length = 0;
    const [nextB, nextC] = [toExecuting(b), toExecuting(c)];
    expect(updates()).toBe(1);
    expect((await nextB)?.lifecycle).toBe('executing');
    expect((await nextC)?.lifecycle).toBe('executing');
    expect(updates()).toBe(2);
    // Many in one turn after that go as one statement again.
    const more = await reserveMany(store, 12, 'crowd-');
    sent.length = 0;
    const moved = await Promise.all(more.map(toExecuting));
    expect(batches(sent)).toEqual([12]);
    expect(moved.every((r) => r?.lifecycle === 'executing')).toBe(true);
    // Each write landed once, with its event at the next seq.
    expect((await store.events(a.id)).map((e) => [e.seq, e.type])).toEqual([
      [1, 'reserved'],
      [2, 'executing'],
      [3, 'settled'],
    ]);
    await store.close();
  });

  it('reserves of one turn go as one statement, each created with its own record and seq-1 event', async () => {
    const { store, sent } = await openStore();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => store.reserve(newOp(`r${i}`), ev('reserved', T0 + i))),
    );
    expect(batches(sent)).toEqual([30]);
    results.forEach((r, i) => {
      expect(r).toMatchObject({
        created: true,
        record: { id: `op-r${i}`, idempotencyKey: `key-r${i}`, lifecycle: 'requested', attempt: 0 },
      });
    });
    for (const i of [0, 17, 29]) {
      expect((await store.events(`op-r${i}`)).map((e) => [e.seq, e.type, e.at, e.to])).toEqual([
        [1, 'reserved', T0 + i, 'requested'],
      ]);
    }
    await store.close();
  });

  it('one key reserved twice in one turn: one record; the other caller gets it as already reserved', async () => {
    const { store } = await openStore();
    const [a, b] = await Promise.all([
      store.reserve(newOp('x1', { idempotencyKey: 'same-key' }), ev('reserved')),
      store.reserve(newOp('x2', { idempotencyKey: 'same-key' }), ev('reserved')),
    ]);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    expect(a.record.id).toBe(b.record.id);
    expect((await store.list()).map((r) => r.id)).toEqual([a.record.id]);
    expect(await store.events(a.record.id)).toHaveLength(1);
    await store.close();
  });

  it('an id taken under another key fails only its own reserve in a batch; the others are made', async () => {
    const { store } = await openStore();
    await store.reserve(newOp('taken'), ev('reserved'));
    const results = await Promise.allSettled([
      store.reserve(newOp('y1'), ev('reserved')),
      store.reserve(newOp('taken', { idempotencyKey: 'other-key' }), ev('reserved')),
      store.reserve(newOp('y2'), ev('reserved')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({
      code: 'store_conflict',
      field: 'op.id',
    });
    expect((await store.list()).map((r) => r.id).sort()).toEqual(['op-taken', 'op-y1', 'op-y2']);
    expect(await store.events('op-taken')).toHaveLength(1);
    await store.close();
  });

  it("a transition called in the same turn as its operation's reserve finds the row: reserves go first", async () => {
    const { store } = await openStore();
    const [reserved, moved] = await Promise.all([
      store.reserve(newOp('z'), ev('reserved')),
      store.transition(
        'op-z',
        ['requested'],
        { lifecycle: 'executing', attempt: 1 },
        ev('executing', T0 + 1),
      ),
    ]);
    expect(reserved.created).toBe(true);
    expect(moved).toMatchObject({ id: 'op-z', lifecycle: 'executing', attempt: 1 });
    expect((await store.events('op-z')).map((e) => e.type)).toEqual(['reserved', 'executing']);
    await store.close();
  });

  it('a repeat of one operation in the same turn goes after the first, in call order', async () => {
    const { store, sent } = await openStore();
    await reserveMany(store, 3);
    sent.length = 0;
    // Three steps of op-0 issued together must apply as if called one after another; op-1 and op-2
    // ride in the first statement with op-0's first step.
    const [a, b, c, d, e] = await Promise.all([
      store.transition('op-0', ['requested'], { lifecycle: 'executing' }, ev('a', T0 + 1)),
      store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('a', T0 + 1)),
      store.transition('op-0', ['executing'], { lifecycle: 'running' }, ev('b', T0 + 2)),
      store.transition('op-2', ['requested'], { lifecycle: 'executing' }, ev('a', T0 + 1)),
      store.transition('op-0', ['running'], { lifecycle: 'executing' }, ev('c', T0 + 3)),
    ]);
    expect([a, b, c, d, e].map((r) => r?.lifecycle)).toEqual([
      'executing',
      'executing',
      'running',
      'executing',
      'executing',
    ]);
    expect(batches(sent)).toEqual([3]);
    expect(singles(sent)).toBe(2);
    expect((await store.events('op-0')).map((x) => [x.seq, x.type, x.from, x.to])).toEqual([
      [1, 'reserved', null, 'requested'],
      [2, 'a', 'requested', 'executing'],
      [3, 'b', 'executing', 'running'],
      [4, 'c', 'running', 'executing'],
    ]);
    expect((await store.events('op-1')).map((x) => x.seq)).toEqual([1, 2]);
    await store.close();
  });

  it('many writers racing for one operation in one turn: exactly one wins, seqs stay contiguous', async () => {
    const { store } = await openStore();
    await reserveMany(store, 4);
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, op) =>
        Array.from({ length: 6 }, (_, w) =>
          store.transition(
            `op-${op}`,
            ['requested'],
            { lifecycle: 'settled', status: 'verified', reads: w },
            ev(`w${w}`, T0 + w),
          ),
        ),
      ).flat(),
    );
    for (let op = 0; op < 4; op++) {
      const mine = results.slice(op * 6, op * 6 + 6);
      const winners = mine.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(await store.get(`op-${op}`)).toEqual(winners[0]);
      const events = await store.events(`op-${op}`);
      expect(events.map((e) => e.seq)).toEqual([1, 2]);
      expect(events[1]!.type).toBe(`w${winners[0]!.reads}`);
    }
    await store.close();
  });

  it('stale lease tokens mixed into a batch change nothing; the live ones apply in the same statement', async () => {
    const { store, sent } = await openStore();
    await reserveMany(store, 10);
    const claims = await store.claimDue(10, 60_000, 'w', T0);
    expect(claims).toHaveLength(0); // reserved records carry no nextPollAt: claim them after making them due
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.transition(`op-${i}`, ['requested'], { lifecycle: 'accepted', nextPollAt: T0 }, ev('acc', T0)),
      ),
    );
    const leased = await store.claimDue(10, 60_000, 'w', T0 + 1);
    expect(leased).toHaveLength(10);
    const before = new Map(leased.map((c) => [c.record.id, c.record]));
    sent.length = 0;
    const results = await Promise.all(
      leased.map((c, i) =>
        store.transition(
          c.record.id,
          ['accepted'],
          {
            lifecycle: 'settled',
            status: 'verified',
            leaseOwner: null,
            leaseToken: null,
            leaseExpiresAt: null,
          },
          ev('settled', T0 + 2),
          { leaseToken: i % 2 === 0 ? c.leaseToken : `stale-${i}` },
        ),
      ),
    );
    expect(batches(sent)).toEqual([10]);
    for (const [i, c] of leased.entries()) {
      const stored = await store.get(c.record.id);
      const events = await store.events(c.record.id);
      if (i % 2 === 0) {
        expect(results[i]).toMatchObject({ lifecycle: 'settled', leaseToken: null });
        expect(stored).toEqual(results[i]);
        expect(events.map((e) => e.type)).toEqual(['reserved', 'acc', 'claimed', 'settled']);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      } else {
        expect(results[i]).toBeNull();
        expect(stored).toEqual(before.get(c.record.id));
        expect(events.map((e) => e.type)).toEqual(['reserved', 'acc', 'claimed']);
      }
    }
    await store.close();
  });

  it('one transition whose value the server refuses fails alone, with the error it gets alone', async () => {
    const { store, sent } = await openStore();
    await reserveMany(store, 6);
    const alone = await store
      .transition('op-5', ['requested'], { reads: 1.5 }, ev('x', T0 + 1))
      .catch((error: unknown) => error);
    expect(alone).toMatchObject({ code: '22P02' }); // invalid input syntax for type integer
    sent.length = 0;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        store.transition(`op-${i}`, ['requested'], { reads: i === 2 ? 2.5 : i }, ev('x', T0 + 1)),
      ),
    );
    // The batch failed as a whole (nothing committed), then each transition went alone.
    expect(batches(sent)).toEqual([5]);
    expect(singles(sent)).toBe(5);
    expect(outcomes[2]).toMatchObject({ status: 'rejected', reason: { code: '22P02' } });
    for (const i of [0, 1, 3, 4]) {
      expect(outcomes[i]).toMatchObject({ status: 'fulfilled', value: { reads: i } });
      expect((await store.get(`op-${i}`))?.reads).toBe(i);
      expect((await store.events(`op-${i}`)).map((e) => e.seq)).toEqual([1, 2]);
    }
    expect((await store.get('op-2'))?.reads).toBe(0);
    expect(await store.events('op-2')).toHaveLength(1);
    await store.close();
  });

  it('batches per shape: different patches or guards in one turn go as separate statements', async () => {
    const { store, sent } = await openStore();
    await reserveMany(store, 8);
    sent.length = 0;
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i < 4
          ? store.transition(`op-${i}`, ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1))
          : store.transition(`op-${i}`, ['requested'], { reads: 1 }, ev('x', T0 + 1), { attempt: 0 }),
      ),
    );
    expect(batches(sent).sort()).toEqual([4, 4]);
    for (let i = 0; i < 8; i++) {
      expect(await store.get(`op-${i}`)).toMatchObject(
        i < 4 ? { lifecycle: 'executing', reads: 0 } : { lifecycle: 'requested', reads: 1 },
      );
    }
    await store.close();
  });

  it('two stores batching over the same operations in opposite orders never deadlock', async () => {
    const { store: a, sent: sentA, real, schema } = await openStore({ max: 6 });
    const { db, sent: sentB } = recordingPool(real);
    const b = await postgresStore({ pool: db, schema, leaseClock: 'caller' });
    await reserveMany(a, 30);
    const ids = Array.from({ length: 30 }, (_, i) => `op-${i}`);
    for (let round = 1; round <= 15; round++) {
      const write = (store: OperationStore, order: string[]) =>
        Promise.all(
          order.map((id) => store.transition(id, ALL, { reads: round }, ev(`r${round}`, T0 + round))),
        );
      await Promise.all([write(a, ids), write(b, [...ids].reverse())]);
    }
    // A deadlock would have failed a batch and sent its transitions again one by one.
    expect(singles(sentA) + singles(sentB)).toBe(0);
    for (const id of ids) {
      const events = await a.events(id);
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
      expect((await a.get(id))?.reads).toBe(15);
    }
    await a.close();
    await b.close();
  });

  it('groupCommit: false sends each transition alone and gives the same records and events', async () => {
    const run = async (groupCommit: boolean) => {
      const { store, sent } = await openStore({ groupCommit });
      await reserveMany(store, 5);
      sent.length = 0;
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          store.transition(
            `op-${i}`,
            i === 3 ? ['executing'] : ['requested'],
            { lifecycle: 'accepted', providerRef: { job: i }, completion: null, nextPollAt: T0 + i },
            ev('acc', T0 + 7, { status: 'pending', detail: i === 1 ? null : { i } } as never),
          ),
        ),
      );
      const events = await Promise.all(results.map((_, i) => store.events(`op-${i}`)));
      await store.close();
      return { results, events, sent };
    };
    const on = await run(true);
    const off = await run(false);
    expect(batches(on.sent)).toEqual([5]);
    expect(batches(off.sent)).toEqual([]);
    expect(singles(off.sent)).toBe(5);
    expect(on.results).toEqual(off.results);
    expect(on.results[3]).toBeNull();
    expect(on.events).toEqual(off.events);
    // A given `null` detail reads back as null, not as absent, on both paths.
    expect(on.events[1]?.[1]?.detail).toBeNull();
  });

  it('close() commits the transitions already called before it ends the pool', async () => {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema, leaseClock: 'caller' });
    await reserveMany(store, 5);
    const pending = Array.from({ length: 5 }, (_, i) =>
      store.transition(`op-${i}`, ['requested'], { reads: 7 }, ev('x', T0 + 1)),
    );
    await store.close();
    expect((await Promise.all(pending)).map((r) => r?.reads)).toEqual([7, 7, 7, 7, 7]);
    const check = new pg.Client({ connectionString: PG_URL });
    await check.connect();
    const { rows } = await check.query(`SELECT count(*)::int AS n FROM "${schema}".events WHERE type = 'x'`);
    await check.end();
    expect(rows[0].n).toBe(5);
  });

  it('refuses a groupCommit that is not a boolean', async () => {
    await expect(
      postgresStore({ connectionString: PG_URL, groupCommit: 'yes' as unknown as boolean }),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'groupCommit' });
  });
});

describe.skipIf(!available)('postgres group commit after a lost connection', () => {
  /**
   * A store over a real pool whose first batched statement of one kind (`UPDATE`: transitions, `INSERT
   * INTO … operations`: reserves) can be failed, with fast retries.
   */
  async function faulty(fault: (run: () => Promise<PgResult>) => Promise<PgResult>, kind = 'UPDATE') {
    const schema = tempSchema();
    const real = tempPool(3);
    await migrate(real, schema);
    let failed = false;
    const { db, sent } = recordingPool(real, (text, values) => {
      if (failed || !text.includes(BATCHED) || !text.includes(kind)) return undefined;
      failed = true;
      return fault(() => real.query(text, values) as Promise<PgResult>);
    });
    const store = createPostgresStore({
      db,
      tables: tablesIn(schema),
      label: 'faulty',
      groupCommit: true,
      reconnect: reconnectPolicy({ retries: 3, baseMs: 1, maxMs: 5 }),
    });
    return { store, sent };
  }
  const lost = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

  /** Reserves op-0..op-5, forgets those statements, then moves all six to executing in one turn. */
  async function reserveAndMoveSix(store: OperationStore, sent: Sent[]) {
    await reserveMany(store, 6);
    sent.length = 0;
    return Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        store.transition(`op-${i}`, ['requested'], { lifecycle: 'executing', reads: i }, ev('exec', T0 + 1)),
      ),
    );
  }

  it('a batch whose reply is lost after COMMIT: every caller finds its own write, none applies twice', async () => {
    const { store, sent } = await faulty(async (run) => {
      await run();
      throw lost();
    });
    const results = await reserveAndMoveSix(store, sent);
    expect(batches(sent)).toEqual([6]);
    expect(singles(sent)).toBe(0); // each found its write by id and sent nothing again
    for (let i = 0; i < 6; i++) {
      expect(results[i]).toMatchObject({ lifecycle: 'executing', reads: i });
      expect((await store.events(`op-${i}`)).map((e) => e.type)).toEqual(['reserved', 'exec']);
    }
  });

  it('a batch refused before it ran: each caller retries alone and applies once', async () => {
    const { store, sent } = await faulty(async () => {
      throw lost();
    });
    const results = await reserveAndMoveSix(store, sent);
    expect(singles(sent)).toBe(6);
    for (let i = 0; i < 6; i++) {
      expect(results[i]).toMatchObject({ lifecycle: 'executing', reads: i });
      expect((await store.events(`op-${i}`)).map((e) => e.type)).toEqual(['reserved', 'exec']);
    }
  });

  it('reserves whose batch reply is lost after COMMIT: each finds its own record, none is made twice', async () => {
    const { store, sent } = await faulty(async (run) => {
      await run();
      throw lost();
    }, 'operations (');
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => store.reserve(newOp(i), ev('reserved'))),
    );
    expect(batches(sent)).toEqual([6]);
    expect(sent.filter((s) => s.batch === undefined && s.text.includes('INSERT'))).toHaveLength(0);
    for (let i = 0; i < 6; i++) {
      expect(results[i]).toMatchObject({ created: true, record: { id: `op-${i}`, lifecycle: 'requested' } });
      expect((await store.events(`op-${i}`)).map((e) => [e.seq, e.type])).toEqual([[1, 'reserved']]);
    }
    expect(await store.list()).toHaveLength(6);
  });

  it('reserves whose batch was refused before it ran: each retries alone and is made once', async () => {
    const { store, sent } = await faulty(async () => {
      throw lost();
    }, 'operations (');
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => store.reserve(newOp(i), ev('reserved'))),
    );
    expect(sent.filter((s) => s.batch === undefined && s.text.includes('INSERT'))).toHaveLength(6);
    for (let i = 0; i < 6; i++) {
      expect(results[i]).toMatchObject({ created: true, record: { id: `op-${i}` } });
      expect((await store.events(`op-${i}`)).map((e) => e.type)).toEqual(['reserved']);
    }
    expect(await store.list()).toHaveLength(6);
  });
});
