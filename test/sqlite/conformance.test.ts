import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { storeConformance } from '../../src/testing/store-conformance.js';
import { type Handle, openHandle, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('conformance');
afterAll(tmp.remove);

describe('sqliteStore({ path }) conformance', () => {
  let n = 0;
  // Each case gets its own fresh file (in a directory that does not exist yet), so no case sees another's records.
  const cases = storeConformance(() => sqliteStore({ path: join(tmp.dir, `case-${++n}`, 'ops.db') }));
  for (const c of cases) it(c.name, c.run);
});

describe('sqliteStore({ database }) conformance', () => {
  let handle: Handle | undefined;
  const cases = storeConformance(async () => {
    handle = await openHandle();
    return sqliteStore({ database: handle });
  });
  for (const c of cases) {
    it(c.name, async () => {
      await c.run();
      // The suite closed the store; the caller's handle must still be open and usable.
      expect(handle!.open).toBe(true);
      expect(handle!.prepare('SELECT COUNT(*) AS n FROM readback_operations').get()).toEqual({
        n: expect.any(Number),
      });
      handle!.close();
    });
  }
});

// A driver that can only hand back rows as objects (node:sqlite before Node 24 has no setReturnArrays): the
// store reads its rows by column name instead, and must keep every record field.
describe('sqliteStore({ database }) conformance, a handle whose rows are objects only', () => {
  let handle: Handle | undefined;
  const cases = storeConformance(async () => {
    const opened = await openHandle();
    handle = opened;
    const objectRowsOnly = {
      prepare(sql: string) {
        const statement = opened.prepare(sql);
        return {
          run: (...params: unknown[]) => statement.run(...params),
          get: (...params: unknown[]) => statement.get(...params),
          all: (...params: unknown[]) => statement.all(...params),
        };
      },
      exec: (sql: string) => opened.exec(sql),
      close: () => opened.close(),
      get inTransaction() {
        return opened.inTransaction;
      },
      get open() {
        return opened.open;
      },
    };
    return sqliteStore({ database: objectRowsOnly });
  });
  for (const c of cases) {
    it(c.name, async () => {
      await c.run();
      handle!.close();
    });
  }
});

// node:sqlite (Node 22) binds a string only up to its first NUL character, where better-sqlite3 binds all of it:
// 'key\0x' is stored, and looked up, as 'key'. This handle binds the same way over a real better-sqlite3 database
// (Node 20 has no node:sqlite); the store must find that out and refuse such text, as on Postgres, rather than
// store it cut short or let a lookup of it find another record.
function bindsUpToNul(opened: Handle) {
  const cut = (params: unknown[]) => params.map((p) => (typeof p === 'string' ? p.split('\0')[0] : p));
  return {
    prepare(sql: string) {
      const statement = opened.prepare(sql);
      return {
        run: (...params: unknown[]) => statement.run(...cut(params)),
        get: (...params: unknown[]) => statement.get(...cut(params)),
        all: (...params: unknown[]) => statement.all(...cut(params)),
      };
    },
    exec: (sql: string) => opened.exec(sql),
    close: () => opened.close(),
    get isTransaction() {
      return opened.inTransaction;
    },
  };
}

describe('sqliteStore({ database }) conformance, a handle that binds text up to its first NUL (as node:sqlite)', () => {
  const cases = storeConformance(async () => sqliteStore({ database: bindsUpToNul(await openHandle()) }));
  for (const c of cases) it(c.name, c.run);

  it('a key holding a NUL is refused at reserve, and a lookup by it finds nothing, not the record it would be cut to', async () => {
    const store = await sqliteStore({ database: bindsUpToNul(await openHandle()) });
    const op = {
      id: 'op-1',
      action: 'a',
      target: 't',
      scope: {},
      fingerprint: 'f',
      idempotencyKey: 'key',
      runId: 'r',
      actor: null,
      input: null,
      requestedAt: 1,
    };
    const event = {
      type: 'reserved',
      at: 1,
      from: null,
      to: 'requested',
      status: null,
      actor: null,
      attempt: 0,
    } as const;
    await store.reserve(op, event);
    await expect(
      store.reserve({ ...op, id: 'op-2', idempotencyKey: 'key\0two' }, event),
    ).rejects.toMatchObject({
      code: 'unstorable_value',
      field: 'op.idempotencyKey',
    });
    expect(await store.getByKey('key\0two')).toBeNull();
    expect(await store.get('op-1\0')).toBeNull();
    expect(await store.events('op-1\0')).toEqual([]);
    expect(await store.list({ runId: 'r\0' })).toEqual([]);
    const moved = await store.transition(
      'op-1\0',
      ['requested'],
      { lifecycle: 'executing' },
      { ...event, type: 'x' },
    );
    expect(moved).toBeNull();
    expect((await store.get('op-1'))?.lifecycle).toBe('requested');
    await store.close();
  });
});
