import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/index.js';
import type { SqliteLike, SqliteStatement } from '../../src/sqlite/driver.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import type { OperationStore } from '../../src/store/types.js';
import { setStatusAction } from '../fixtures/set-status.js';
import { ev, type Handle, newOp, openHandle, T0, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('group-commit');
afterAll(tmp.remove);
let n = 0;
const freshPath = () => join(tmp.dir, `db-${++n}.db`);

/**
 * A handle that counts the store's COMMITs (the store prepares its COMMIT; migrations exec theirs, so
 * only record writes count) and SAVEPOINTs, logs when each COMMIT returns, and can be told to fail the next
 * COMMITs, or the event INSERTs of one operation (after its row was written: a write that fails half done).
 */
function instrumented(db: Handle) {
  const log: string[] = [];
  const state = {
    commits: 0,
    savepoints: 0,
    failCommits: false,
    failEventsOf: undefined as string | undefined,
  };
  const handle: SqliteLike = {
    prepare(sql: string): SqliteStatement {
      const statement = db.prepare(sql);
      if (sql.trimStart().startsWith('INSERT INTO readback_events')) {
        return {
          run: (...params: unknown[]) => {
            if (params[0] === state.failEventsOf) throw new Error('simulated: event INSERT failed');
            return statement.run(...params);
          },
          get: (...params: unknown[]) => statement.get(...params),
          all: (...params: unknown[]) => statement.all(...params),
        };
      }
      if (sql.startsWith('SAVEPOINT')) {
        return {
          run: (...params: unknown[]) => {
            state.savepoints++;
            return statement.run(...params);
          },
          get: (...params: unknown[]) => statement.get(...params),
          all: (...params: unknown[]) => statement.all(...params),
        };
      }
      if (sql !== 'COMMIT') return statement;
      return {
        run: (...params: unknown[]) => {
          // A COMMIT that throws without committing: SQLite leaves the transaction open, as on an I/O error.
          if (state.failCommits) throw new Error('simulated: disk I/O error during COMMIT');
          const result = statement.run(...params);
          state.commits++;
          log.push('COMMIT');
          return result;
        },
        get: (...params: unknown[]) => statement.get(...params),
        all: (...params: unknown[]) => statement.all(...params),
      };
    },
    exec: (sql: string) => db.exec(sql),
    close: () => db.close(),
    get inTransaction() {
      return db.inTransaction;
    },
  };
  return { handle, log, state };
}

async function open(groupCommit = true, path = freshPath()) {
  const db = await openHandle(path);
  const probe = instrumented(db);
  const store = await sqliteStore({ database: probe.handle }, { groupCommit });
  return { db, store, ...probe };
}

const ALL = ['requested', 'executing', 'accepted', 'running', 'timed_out'] as const;

/**
 * A batch with every kind of outcome: creates, a repeated key, an id conflict, CAS hits and misses,
 * an identity change the store refuses, a claim, and a reserve whose key a queued transition touched.
 */
function workload(store: OperationStore): Promise<unknown>[] {
  const calls: (() => Promise<unknown>)[] = [];
  for (let i = 0; i < 16; i++) calls.push(() => store.reserve(newOp(i), ev('reserved', T0 + i)));
  calls.push(() => store.reserve(newOp('dup', { idempotencyKey: 'key-3' }), ev('reserved')));
  calls.push(() => store.reserve(newOp(4, { idempotencyKey: 'key-other' }), ev('reserved')));
  for (let i = 0; i < 16; i += 2) {
    calls.push(() =>
      store.transition(
        `op-${i}`,
        ['requested'],
        { lifecycle: 'running', nextPollAt: T0 },
        ev('run', T0 + 20),
      ),
    );
  }
  calls.push(() => store.transition('op-0', ['requested'], { lifecycle: 'executing' }, ev('miss', T0 + 21)));
  calls.push(() =>
    store.transition('op-1', [...ALL], { fingerprint: 'changed' } as never, ev('identity', T0 + 22)),
  );
  calls.push(() => store.transition('op-missing', [...ALL], { reads: 1 }, ev('x', T0 + 23)));
  calls.push(() => store.claimDue(3, 1_000, 'w1', T0 + 30));
  calls.push(() => store.reserve(newOp('again', { idempotencyKey: 'key-2' }), ev('reserved')));
  calls.push(() => store.transition('op-2', ['running'], { reads: 2 }, ev('obs', T0 + 31)));
  for (let i = 16; i < 48; i++) calls.push(() => store.reserve(newOp(i), ev('reserved', T0 + i)));
  return calls.map((call) => call());
}

/** Settled results with lease tokens (random per store) reduced to their presence. */
async function settle(promises: Promise<unknown>[]) {
  const results = await Promise.allSettled(promises);
  return JSON.parse(
    JSON.stringify(
      results.map((r) =>
        r.status === 'fulfilled' ? { value: r.value } : { error: (r.reason as { code?: string }).code },
      ),
    ),
    (key, value) => (key === 'leaseToken' && typeof value === 'string' ? 'token' : value),
  );
}

async function contents(store: OperationStore) {
  const records = await store.list();
  return JSON.parse(
    JSON.stringify({ records, events: await Promise.all(records.map((r) => store.events(r.id))) }),
    (key, value) => (key === 'leaseToken' && typeof value === 'string' ? 'token' : value),
  );
}

describe('sqliteStore group commit', () => {
  it('commits 64 concurrent reserves, then 64 concurrent transitions, in one transaction each', async () => {
    const { db, store, state } = await open();
    const reserved = await Promise.all(
      Array.from({ length: 64 }, (_, i) => store.reserve(newOp(i), ev('reserved'))),
    );
    expect(reserved.every((r) => r.created)).toBe(true);
    expect(state.commits).toBe(1);
    const moved = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        store.transition(`op-${i}`, ['requested'], { lifecycle: 'executing', attempt: 1 }, ev('x', T0 + 1)),
      ),
    );
    expect(moved.map((r) => r?.lifecycle)).toEqual(Array(64).fill('executing'));
    expect(state.commits).toBe(2);
    // Nothing failed, so no write needed a savepoint of its own.
    expect(state.savepoints).toBe(0);
    expect(await store.list({ lifecycle: 'executing' })).toHaveLength(64);
    await store.close();
    db.close();
  });

  it('with groupCommit: false commits once per write', async () => {
    const { db, store, state } = await open(false);
    await Promise.all(Array.from({ length: 64 }, (_, i) => store.reserve(newOp(i), ev('reserved'))));
    expect(state.commits).toBe(64);
    await store.close();
    db.close();
  });

  it('gives every caller exactly what sequential execution in call order gives', async () => {
    const grouped = await open(true);
    const together = await settle(workload(grouped.store));
    expect(together).toHaveLength(64);

    // The reference: the same calls, each awaited before the next is made, one commit per write.
    const reference = await open(false);
    const oneByOne: Promise<unknown>[] = [];
    for (const thunk of workloadThunks(lazyStore(reference.store))) {
      const p = thunk();
      oneByOne.push(p);
      await p.catch(() => undefined);
    }
    expect(together).toEqual(await settle(oneByOne));
    expect(await contents(grouped.store)).toEqual(await contents(reference.store));
    expect(grouped.state.commits).toBe(1);
    // Both outcomes occurred: the batch held failing writes and they did not take the others down.
    expect(together.filter((r: { error?: string }) => r.error === 'store_conflict')).toHaveLength(2);
    for (const s of [grouped, reference]) {
      await s.store.close();
      s.db.close();
    }
  });

  it('a write that fails inside a batch rolls back and rejects alone', async () => {
    const { db, store, state } = await open();
    const results = await Promise.allSettled([
      store.reserve(newOp(1), ev('reserved')),
      // Same id, other key: refused, and its half-done work must not stay.
      store.reserve(newOp(1, { idempotencyKey: 'key-x' }), ev('reserved')),
      store.reserve(newOp(2), ev('reserved')),
      store.transition('op-1', [...ALL], { idempotencyKey: 'key-y' } as never, ev('identity')),
      store.transition('op-2', ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1)),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect(results.filter((r) => r.status === 'rejected').map((r) => r.reason.code)).toEqual([
      'store_conflict',
      'store_conflict',
    ]);
    // The first run without savepoints was rolled back whole, then each write ran again in its own.
    expect(state.savepoints).toBe(5);
    expect(state.commits).toBe(1);
    expect((await store.list()).map((r) => [r.id, r.idempotencyKey, r.lifecycle])).toEqual([
      ['op-1', 'key-1', 'requested'],
      ['op-2', 'key-2', 'executing'],
    ]);
    expect((await store.events('op-1')).map((e) => e.type)).toEqual(['reserved']);
    expect((await store.events('op-2')).map((e) => e.type)).toEqual(['reserved', 'x']);
    await store.close();
    db.close();
  });

  it('a write that fails half done (its row written, its event not) leaves nothing of it, in either run', async () => {
    const { db, store, state } = await open();
    await Promise.all([1, 2, 3].map((i) => store.reserve(newOp(i), ev('reserved'))));
    state.failEventsOf = 'op-2';
    state.savepoints = 0;
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) =>
        store.transition(`op-${i}`, ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1)),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/event INSERT failed/);
    // The first run, without savepoints, was rolled back whole; the second took one per write.
    expect(state.savepoints).toBe(3);
    expect((await store.list()).map((r) => [r.id, r.lifecycle])).toEqual([
      ['op-1', 'executing'],
      ['op-2', 'requested'],
      ['op-3', 'executing'],
    ]);
    state.failEventsOf = undefined;
    expect((await store.events('op-2')).map((e) => e.type)).toEqual(['reserved']);
    expect((await store.events('op-3')).map((e) => e.type)).toEqual(['reserved', 'x']);
    await store.close();
    db.close();
  });

  it('acknowledges nothing before COMMIT: every write resolves after it, visible to another connection', async () => {
    const path = freshPath();
    const { db, store, log } = await open(true, path);
    const other = await openHandle(path);
    const count = other.prepare('SELECT COUNT(*) AS n FROM readback_operations');
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        store.reserve(newOp(i), ev('reserved')).then(() => {
          log.push(`resolved ${i}`);
          seen.push((count.get() as { n: number }).n);
        }),
      ),
    );
    expect(log[0]).toBe('COMMIT');
    expect(log.filter((l) => l === 'COMMIT')).toHaveLength(1);
    // At each acknowledgment the whole batch was already committed and readable from outside.
    expect(seen).toEqual(Array(16).fill(16));
    other.close();
    await store.close();
    db.close();
  });

  it('a COMMIT that fails rejects every write of its batch and leaves nothing written', async () => {
    const { db, store, state } = await open();
    await store.reserve(newOp('before'), ev('reserved'));
    state.failCommits = true;
    const results = await Promise.allSettled([
      ...Array.from({ length: 8 }, (_, i) => store.reserve(newOp(i), ev('reserved'))),
      store.transition('op-before', ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1)),
    ]);
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(
      results.map((r) => (r as PromiseRejectedResult).reason.message).every((m) => /COMMIT/.test(m)),
    ).toBe(true);
    expect(db.inTransaction).toBe(false);
    expect((await store.list()).map((r) => [r.id, r.lifecycle])).toEqual([['op-before', 'requested']]);
    expect(await store.events('op-before')).toHaveLength(1);
    // The store goes on working once commits succeed again.
    state.failCommits = false;
    expect((await store.reserve(newOp(1), ev('reserved'))).created).toBe(true);
    expect(await store.list()).toHaveLength(2);
    await store.close();
    db.close();
  });

  it('a reserve repeated while a write is queued answers with that write applied', async () => {
    const { db, store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    const [moved, again] = await Promise.all([
      store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1)),
      store.reserve(newOp('retry', { idempotencyKey: 'key-1' }), ev('reserved')),
    ]);
    expect(again).toEqual({ record: moved, created: false });
    await store.close();
    db.close();
  });

  it('a lone writer commits at once: one operation at a time never waits a turn for company', async () => {
    const path = freshPath();
    const { db, store, state } = await open(true, path);
    // A fresh store has seen no writer yet, so its first write waits for company as before.
    const first = store.reserve(newOp(1), ev('reserved'));
    expect(state.commits).toBe(0);
    await first;
    expect(state.commits).toBe(1);
    // The same operation's next writes follow alone: each is committed before the call returns.
    const moved = store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1));
    expect(state.commits).toBe(2);
    expect((await moved)?.lifecycle).toBe('executing');
    const settled = store.transition(
      'op-1',
      ['executing'],
      { lifecycle: 'settled', status: 'verified' },
      ev('settled', T0 + 2),
    );
    expect(state.commits).toBe(3);
    expect((await settled)?.lifecycle).toBe('settled');
    // The operation ended, so the next one's reserve is a lone writer too; a retry of it as well.
    const next = store.reserve(newOp(2), ev('reserved', T0 + 3));
    expect(state.commits).toBe(4);
    expect((await next).created).toBe(true);
    // Everything a lone write acknowledged is committed and readable from another connection.
    const other = await openHandle(path);
    expect(other.prepare('SELECT COUNT(*) AS n FROM readback_events').get()).toEqual({ n: 4 });
    other.close();
    await store.close();
    db.close();
  });

  it('operations in flight together still share commits, even when their writes arrive one by one', async () => {
    const { db, store, state } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    // op-1 is still open: a write for another operation is not a lone writer, so it waits for company.
    const second = store.reserve(newOp(2), ev('reserved'));
    expect(state.commits).toBe(1);
    await second;
    expect(state.commits).toBe(2);
    // Both open, writing in the same turn: one commit for the two.
    const moved = await Promise.all(
      [1, 2].map((i) =>
        store.transition(`op-${i}`, ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1)),
      ),
    );
    expect(moved.map((r) => r?.lifecycle)).toEqual(['executing', 'executing']);
    expect(state.commits).toBe(3);
    // After a batch of several, even the same operation's next write waits for company.
    const after = store.transition('op-2', ['executing'], { reads: 1 }, ev('obs', T0 + 2));
    expect(state.commits).toBe(3);
    await after;
    expect(state.commits).toBe(4);
    await store.close();
    db.close();
  });

  it('close commits the writes already called, and their callers hear so', async () => {
    const { db, store } = await open();
    const pending = store.reserve(newOp(1), ev('reserved'));
    await store.close();
    expect((await pending).created).toBe(true);
    expect(db.prepare('SELECT COUNT(*) AS n FROM readback_operations').get()).toEqual({ n: 1 });
    db.close();
  });
});

describe('the runner on sqliteStore: how many commits an action costs', () => {
  const rows = new Map<string, string>();
  const setStatus = (withBaseline = false) => setStatusAction(rows, { withBaseline });
  const lifecycleTrail = async (store: OperationStore, id: string) =>
    (await store.events(id)).map((e) => `${e.type}:${e.from ?? '-'}>${e.to ?? '-'}@${e.attempt}`);

  it('two: the reserve that also moves the record to executing, then the settle', async () => {
    const { db, store, state } = await open();
    const runner = createRunner({ store });
    const action = setStatus();
    for (const id of ['a', 'b', 'c']) {
      const before = state.commits;
      const c = await runner.run(action, { id, status: 'done' }, { runId: 'r' });
      expect(c.status).toBe('verified');
      expect(state.commits - before).toBe(2);
      expect(await lifecycleTrail(store, c.operationId)).toEqual([
        'reserved:->requested@0',
        'executing:requested>executing@1',
        'settled:executing>settled@1',
      ]);
    }
    await store.close();
    db.close();
  });

  it('three when something runs between reserving and executing (a baseline read), or the store leaves the start to it', async () => {
    const { db, store, state } = await open();
    const withBaseline = setStatus(true);
    let before = state.commits;
    const c = await createRunner({ store }).run(withBaseline, { id: 'd', status: 'done' }, { runId: 'r' });
    expect(c.status).toBe('verified');
    expect(state.commits - before).toBe(3);

    // A store (or a wrapper) that knows nothing of starts: the drive moves the record itself.
    const plain: OperationStore = { ...store, reserve: (op, event) => store.reserve(op, event) };
    before = state.commits;
    const p = await createRunner({ store: plain }).run(
      setStatus(),
      { id: 'e', status: 'done' },
      { runId: 'r' },
    );
    expect(p.status).toBe('verified');
    expect(state.commits - before).toBe(3);
    expect(await lifecycleTrail(store, p.operationId)).toEqual(await lifecycleTrail(store, c.operationId));
    await store.close();
    db.close();
  });

  it('an aborted call reserves nothing and starts nothing; a repeat with the same key then runs', async () => {
    const { db, store, state } = await open();
    const runner = createRunner({ store });
    const action = setStatus();
    const controller = new AbortController();
    controller.abort();
    const aborted = await runner.run(
      action,
      { id: 'f', status: 'done' },
      { runId: 'r', signal: controller.signal },
    );
    expect(aborted).toMatchObject({ status: 'failed', errorCode: 'aborted', attempt: 0 });
    expect(state.commits).toBe(0);
    expect(rows.has('f')).toBe(false);
    const ran = await runner.run(action, { id: 'f', status: 'done' }, { runId: 'r' });
    expect(ran.status).toBe('verified');
    expect(rows.get('f')).toBe('done');
    await store.close();
    db.close();
  });
});

// The workload as thunks, so the reference store can await each call before making the next.
function workloadThunks(lazy: ReturnType<typeof lazyStore>): (() => Promise<unknown>)[] {
  workload(lazy.store);
  return lazy.calls;
}

/** A store whose write calls are recorded as thunks instead of run. */
function lazyStore(target: OperationStore) {
  const calls: (() => Promise<unknown>)[] = [];
  const store = new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(() => value.apply(t, args));
        return new Promise(() => undefined);
      };
    },
  }) as OperationStore;
  return { store, calls };
}
