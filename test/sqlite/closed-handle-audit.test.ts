import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SqliteLike, SqliteStatement } from '../../src/sqlite/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import type { OperationStore } from '../../src/store/types.js';
import { ev, type Handle, newOp, openHandle, rejection, T0, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('closed-handle-audit');
afterAll(tmp.remove);

// Node 20 has no node:sqlite, so this stands in for a DatabaseSync over a real better-sqlite3 handle, with
// node:sqlite's behaviour once closed: the database throws ERR_INVALID_STATE "database is not open", its
// statements "statement has been finalized", and there is no `open` flag (`isOpen` only from Node 22.15).
class NodeSqliteStandIn implements SqliteLike {
  private closed = false;
  constructor(
    private readonly real: Handle,
    private readonly withIsOpen: boolean,
  ) {}
  get isOpen(): boolean | undefined {
    return this.withIsOpen ? !this.closed : undefined;
  }
  get isTransaction(): boolean {
    this.check('database is not open');
    return this.real.inTransaction === true;
  }
  prepare(sql: string): SqliteStatement {
    this.check('database is not open');
    const statement = this.real.prepare(sql);
    const guard =
      <K extends keyof SqliteStatement>(name: K) =>
      (...params: unknown[]) => {
        this.check('statement has been finalized');
        return (statement[name] as (...p: unknown[]) => unknown)(...params);
      };
    return { run: guard('run'), get: guard('get'), all: guard('all') } as SqliteStatement;
  }
  exec(sql: string): void {
    this.check('database is not open');
    this.real.exec(sql);
  }
  close(): void {
    this.check('database is not open');
    this.closed = true;
    this.real.close();
  }
  private check(message: string): void {
    if (this.closed) throw Object.assign(new Error(message), { code: 'ERR_INVALID_STATE' });
  }
}

type Maker = [string, (path: string) => Promise<SqliteLike>];
const makers: Maker[] = [
  ['better-sqlite3', (path) => openHandle(path)],
  ['node:sqlite before isOpen', async (path) => new NodeSqliteStandIn(await openHandle(path), false)],
  ['node:sqlite with isOpen', async (path) => new NodeSqliteStandIn(await openHandle(path), true)],
];

// Every method but close, called as a runner or reconciler would.
function calls(store: OperationStore): [string, () => Promise<unknown>][] {
  return [
    ['reserve', () => store.reserve(newOp(2), ev('reserved'))],
    [
      'transition',
      () => store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('executing')),
    ],
    ['get', () => store.get('op-1')],
    ['getByKey', () => store.getByKey('key-1')],
    ['events', () => store.events('op-1')],
    ['list', () => store.list()],
    ['claimDue', () => store.claimDue(5, 1000, 'reconciler', T0 + 10)],
    ['renewLease', () => store.renewLease!('op-1', 'token', 1000, T0)],
  ];
}

describe.each(makers)('a %s handle the caller closed', (_name, make) => {
  // Was: "database: cannot prepare the handle: The database connection is not open" (or node:sqlite's words).
  it('is refused at open as closed, naming the field', async () => {
    const db = await make(':memory:');
    db.close();
    const error = await rejection(sqliteStore({ database: db }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'database' });
    expect(error.message).toBe('database: is closed; pass an open handle, and close it only after the store');
  });

  // Was a raw TypeError ("The database connection is not open") or node:sqlite's ERR_INVALID_STATE, which
  // says nothing about readback; the store now says it is closed, as it does after its own close().
  it('makes every store method reject with store_closed, and leaves the committed records alone', async () => {
    const path = join(tmp.fresh(), 'ops.db');
    const db = await make(path);
    const store = await sqliteStore({ database: db });
    await store.reserve(newOp(1), ev('reserved'));
    db.close();
    for (const [name, call] of calls(store)) {
      const error = await rejection(call());
      expect({ name, code: error.code }).toEqual({ name, code: 'store_closed' });
      expect(error.message).toContain('its database handle was closed by its owner');
      expect(error.message).toContain(`cannot ${name}`);
    }
    await store.close();
    // The record committed before the close is on disk, and nothing else is.
    const check = await openHandle(path);
    expect(check.prepare('SELECT id FROM readback_operations').all()).toEqual([{ id: 'op-1' }]);
    check.close();
  });

  it('rejects writes queued for the next group commit with store_closed too', async () => {
    const db = await make(':memory:');
    const store = await sqliteStore({ database: db });
    const writes = [1, 2, 3].map((n) => store.reserve(newOp(n), ev('reserved')));
    db.close();
    const settled = await Promise.allSettled(writes);
    const rejected = settled.filter((s) => s.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    for (const s of rejected)
      expect((s as PromiseRejectedResult).reason).toMatchObject({ code: 'store_closed' });
    await store.close();
  });
});

describe('errors that are not a closed handle', () => {
  it('pass through unchanged on an open caller handle', async () => {
    const db = await openHandle();
    const store = await sqliteStore({ database: db });
    db.exec('DROP TABLE readback_operations');
    const error = await store.get('op-1').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error?.message).toContain('no such table');
    await store.close();
    expect(await rejection(store.list())).toMatchObject({ code: 'store_closed' });
    db.close();
  });
});
