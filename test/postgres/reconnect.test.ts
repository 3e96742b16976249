// Statements retried after a lost connection, with faults injected between the store and a real server:
// a reply lost after COMMIT, a connection refused before the statement was sent, and a first try that
// commits late, after its retry began. Writes must land exactly once and answer truthfully.
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { PgQueryable, PgResult } from '../../src/postgres/driver.js';
import { isConnectionError, postgresStore } from '../../src/postgres/index.js';
import { reconnectPolicy } from '../../src/postgres/retry.js';
import { migrate } from '../../src/postgres/schema.js';
import { tablesIn } from '../../src/postgres/sql.js';
import { createPostgresStore } from '../../src/postgres/store.js';
import type { OperationStore } from '../../src/store/types.js';
import { ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { PG_URL, pgSuite } from './support.js';

const lost = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('isConnectionError', () => {
  it('knows lost connections and refuses statement errors', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '08006', '08001', '53300']) {
      expect(isConnectionError(Object.assign(new Error(code), { code }))).toBe(true);
    }
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionError(new AggregateError([refused(), refused()]))).toBe(true);
    for (const code of ['23505', '40001', '42P01', '57014']) {
      expect(isConnectionError(Object.assign(new Error(code), { code }))).toBe(false);
    }
    expect(isConnectionError(new Error('Connection terminated'))).toBe(false);
    expect(isConnectionError(null)).toBe(false);
  });
});

const { available, tempSchema, tempPool } = await pgSuite();

/** What the fault hook sees: the statement, and the real server to run it on. */
type Hook = (text: string, values: unknown[] | undefined, real: pg.Pool) => Promise<PgResult> | undefined;

/** A store over a real pool, with `hook` able to intercept any statement, and fast retries. */
async function faultyStore(hook: Hook): Promise<{ store: OperationStore; real: pg.Pool; calls: string[] }> {
  const schema = tempSchema();
  const real = tempPool(3);
  await migrate(real, schema);
  const calls: string[] = [];
  const db: PgQueryable & { totalCount: number } = {
    totalCount: 0,
    query(text, values) {
      calls.push(text);
      return hook(text, values, real) ?? (real.query(text, values) as Promise<PgResult>);
    },
  };
  const policy = { ...reconnectPolicy({ retries: 3, baseMs: 1, maxMs: 5 }) };
  const store = createPostgresStore({ db, tables: tablesIn(schema), label: 'faulty', reconnect: policy });
  return { store, real, calls };
}

/** Fails the `n`th (1-based) statement whose text contains `marker`, once, with `fault`. */
function nth(marker: string, n: number, fault: (run: () => Promise<PgResult>) => Promise<PgResult>): Hook {
  let seen = 0;
  return (text, values, real) => {
    if (!text.includes(marker) || ++seen !== n) return undefined;
    return fault(() => real.query(text, values) as Promise<PgResult>);
  };
}

const UPDATE = 'UPDATE';
const observed = { reads: 1 };

describe.skipIf(!available)('postgres store: retries after connection errors', () => {
  it('a transition whose reply is lost after COMMIT is found, not applied twice', async () => {
    const { store } = await faultyStore(
      nth(UPDATE, 1, async (run) => {
        await run();
        throw lost();
      }),
    );
    await store.reserve(newOp(1), ev('reserved'));
    // Lifecycle-preserving and unguarded: a blind re-apply would match again and log a second event.
    const result = await store.transition('op-1', ['requested'], observed, ev('observed', T0 + 1));
    expect(result).toMatchObject({ id: 'op-1', reads: 1, lifecycle: 'requested' });
    expect((await store.events('op-1')).map((e) => e.type)).toEqual(['reserved', 'observed']);
    await store.close();
  });

  it('a transition refused before it was sent is applied once after backoff', async () => {
    const { store, calls } = await faultyStore(
      nth(UPDATE, 1, async () => {
        throw refused();
      }),
    );
    await store.reserve(newOp(1), ev('reserved'));
    const result = await store.transition('op-1', ['requested'], observed, ev('observed', T0 + 1));
    expect(result?.reads).toBe(1);
    expect((await store.events('op-1')).map((e) => e.type)).toEqual(['reserved', 'observed']);
    expect(calls.filter((c) => c.includes(UPDATE))).toHaveLength(2);
    await store.close();
  });

  it('a first try that commits after its retry began: the write-id index keeps it to one', async () => {
    let tries = 0;
    const { store } = await faultyStore((text, values, real) => {
      if (!text.includes(UPDATE)) return undefined;
      tries++;
      if (tries === 1) return Promise.reject(lost());
      if (tries === 2) {
        // The first try's late commit lands just before the retry's statement.
        return real.query(text, values).then(() => real.query(text, values) as Promise<PgResult>);
      }
      return undefined;
    });
    await store.reserve(newOp(1), ev('reserved'));
    const result = await store.transition('op-1', ['requested'], observed, ev('observed', T0 + 1));
    expect(result?.reads).toBe(1);
    expect((await store.events('op-1')).map((e) => e.type)).toEqual(['reserved', 'observed']);
    await store.close();
  });

  it('a write that landed but was overtaken before the retry answers null, like a lost compare-and-set', async () => {
    let other: OperationStore | undefined;
    const { store } = await faultyStore(
      nth(UPDATE, 1, async (run) => {
        await run();
        await other!.transition('op-1', ['requested'], { reads: 7 }, ev('foreground', T0 + 2));
        throw lost();
      }),
    );
    other = store;
    await store.reserve(newOp(1), ev('reserved'));
    expect(await store.transition('op-1', ['requested'], observed, ev('observed', T0 + 1))).toBeNull();
    expect((await store.events('op-1')).map((e) => e.type)).toEqual(['reserved', 'observed', 'foreground']);
    expect((await store.get('op-1'))?.reads).toBe(7);
    await store.close();
  });

  it('a reserve that starts its operation, its reply lost after COMMIT, reports it created and moved, once', async () => {
    const { store } = await faultyStore(
      nth('INSERT INTO', 1, async (run) => {
        await run();
        throw lost();
      }),
    );
    const start = {
      patch: { lifecycle: 'executing' as const, attempt: 1 },
      event: ev('executing', T0 + 1, { attempt: 1 }),
    };
    const { record, created } = await store.reserve(newOp(1), ev('reserved'), start);
    expect(created).toBe(true);
    expect(record).toMatchObject({ id: 'op-1', lifecycle: 'executing', attempt: 1 });
    expect((await store.events('op-1')).map((e) => [e.seq, e.type])).toEqual([
      [1, 'reserved'],
      [2, 'executing'],
    ]);
    await store.close();
  });

  it('a reserve whose reply is lost after COMMIT still reports created', async () => {
    const { store } = await faultyStore(
      nth('INSERT INTO', 1, async (run) => {
        await run();
        throw lost();
      }),
    );
    const { record, created } = await store.reserve(newOp(1), ev('reserved'));
    expect(created).toBe(true);
    expect(record.id).toBe('op-1');
    expect(await store.events('op-1')).toHaveLength(1);
    // A genuine duplicate is still a duplicate.
    expect((await store.reserve(newOp(2, { idempotencyKey: 'key-1' }), ev('reserved'))).created).toBe(false);
    await store.close();
  });

  it('gives up after the configured retries and throws the connection error', async () => {
    const { store, calls } = await faultyStore((text) =>
      text.includes('WHERE id = $1') ? Promise.reject(refused()) : undefined,
    );
    await expect(store.get('op-1')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(calls.filter((c) => c.includes('WHERE id = $1'))).toHaveLength(4);
    await store.close();
  });

  it('retries only on a pool readback owns', async () => {
    const pool = tempPool(1);
    await expect(
      postgresStore({ pool, reconnect: { retries: 1 } } as unknown as Parameters<typeof postgresStore>[0]),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'reconnect' });
    await expect(
      postgresStore({ connectionString: PG_URL, reconnect: { retries: -1 } }),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'reconnect.retries' });
  });
});
