// A reserve that also starts its operation on SQLite: the row is inserted already moved and both events are
// appended in the same transaction, with no UPDATE, so a committed action costs two commits and five writes.
import { describe, expect, it } from 'vitest';
import { createRunner } from '../../src/index.js';
import type { SqliteLike, SqliteStatement } from '../../src/sqlite/driver.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { MIXED_LIFECYCLES, reserveMixed, start, trail } from '../fixtures/reserve-start.js';
import { setStatusAction } from '../fixtures/set-status.js';
import { ev, type Handle, newOp, openHandle } from '../fixtures/sqlite/support.js';

/** A handle that logs every write statement the store runs (INSERT, UPDATE, BEGIN, COMMIT), by its first word. */
function recording(db: Handle) {
  const log: string[] = [];
  const handle: SqliteLike = {
    prepare(sql: string): SqliteStatement {
      const statement = db.prepare(sql);
      const word = sql.trim().split(/\s+/, 3).join(' ');
      if (!/^(INSERT|UPDATE|BEGIN|COMMIT)/.test(word)) return statement;
      const note =
        <M extends 'run' | 'get' | 'all'>(method: M) =>
        (...params: unknown[]) => {
          log.push(word.startsWith('INSERT') ? word : word.split(' ')[0]!);
          return (statement[method] as (...p: unknown[]) => unknown)(...params);
        };
      const raw = statement.raw ? { raw: (toggle?: boolean) => statement.raw!(toggle) } : {};
      return { run: note('run'), get: note('get'), all: note('all'), ...raw } as SqliteStatement;
    },
    exec: (sql: string) => db.exec(sql),
    close: () => db.close(),
    get inTransaction() {
      return db.inTransaction;
    },
  };
  return { handle, log };
}

const OP = 'INSERT INTO readback_operations';
const EVENT = 'INSERT INTO readback_events';

describe('sqlite reserve with a start', () => {
  const rows = new Map<string, string>();

  for (const groupCommit of [false, true]) {
    it(`a committed action: the reserve inserts the started row, then the settle updates it (groupCommit: ${groupCommit})`, async () => {
      const { handle, log } = recording(await openHandle());
      const store = await sqliteStore({ database: handle }, { groupCommit });
      const runner = createRunner({ store });
      log.length = 0;
      const c = await runner.run(
        setStatusAction(rows),
        { id: `a${groupCommit}`, status: 'done' },
        { runId: 'r' },
      );
      expect(c.status).toBe('verified');
      expect(rows.get(`a${groupCommit}`)).toBe('done');
      expect(log).toEqual(['BEGIN', OP, EVENT, EVENT, 'COMMIT', 'BEGIN', 'UPDATE', EVENT, 'COMMIT']);
      expect(await trail(store, c.operationId)).toEqual([
        '1:reserved:->requested@0',
        '2:executing:requested>executing@1',
        '3:settled:executing>settled@1',
      ]);
      const record = await store.get(c.operationId);
      expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified', attempt: 1 });
      expect(record?.executedAt).toEqual(expect.any(Number));

      // A baseline read runs between reserving and executing: the drive moves the record itself.
      log.length = 0;
      const withBaseline = setStatusAction(rows, { withBaseline: true, name: 'set_status_from_baseline' });
      const b = await runner.run(withBaseline, { id: `b${groupCommit}`, status: 'done' }, { runId: 'r' });
      expect(b.status).toBe('verified');
      expect(log.filter((w) => w === 'COMMIT')).toHaveLength(3);
      expect(log.filter((w) => w === 'UPDATE')).toHaveLength(2);
      await store.close();
    });
  }

  it('plain and started reserves of one batch are inserted in one commit, with no UPDATE', async () => {
    const { handle, log } = recording(await openHandle());
    const store = await sqliteStore({ database: handle });
    log.length = 0;
    const results = await reserveMixed(store);
    expect(log.filter((w) => w === 'COMMIT')).toHaveLength(1);
    expect(log.filter((w) => w === OP)).toHaveLength(6);
    expect(log.filter((w) => w === EVENT)).toHaveLength(9);
    expect(log).not.toContain('UPDATE');
    expect(results.map(({ record }) => record.lifecycle)).toEqual(MIXED_LIFECYCLES);
    await store.close();
  });

  it('a repeat of a started reserve finds the record and starts nothing again', async () => {
    const store = await sqliteStore({ database: await openHandle() });
    const first = await store.reserve(newOp('rep'), ev('reserved'), start());
    const again = await store.reserve(newOp('rep'), ev('reserved'), start(2));
    expect(again.created).toBe(false);
    expect(again.record).toEqual(first.record);
    expect(await trail(store, 'op-rep')).toHaveLength(2);
    await store.close();
  });

  it('a start patch is checked as a transition patch is, before anything is written', async () => {
    const store = await sqliteStore({ database: await openHandle() });
    const refused = [
      [{ lifecycle: 'executing', attempt: null }, 'invalid_options', 'patch.attempt'],
      [{ lifecycle: 'executing', leaseOwner: 'w\ud800' }, 'unstorable_value', 'patch.leaseOwner'],
    ] as const;
    for (const [n, [patch, code, field]] of refused.entries()) {
      const reserve = store.reserve(newOp(`p${n}`), ev('reserved'), { ...start(), patch: patch as never });
      await expect(reserve).rejects.toMatchObject({ code, field });
      expect(await store.get(`op-p${n}`)).toBeNull();
      expect(await store.events(`op-p${n}`)).toEqual([]);
    }
    // A start's updatedAt is its own or the event's: null there is not refused, as a transition's is not.
    const { record } = await store.reserve(newOp('u'), ev('reserved'), {
      ...start(),
      patch: { ...start().patch, updatedAt: null as never },
    });
    expect(record.updatedAt).toBe(start().event.at);
    expect(await store.get('op-u')).toEqual(record);
    await store.close();
  });

  it('a start SQLite cannot store is refused naming its field, before anything is written', async () => {
    const store = await sqliteStore({ database: await openHandle() });
    const [refused, plain] = await Promise.allSettled([
      store.reserve(newOp('bad'), ev('reserved'), {
        ...start(),
        event: { ...start().event, actor: 'a\ud800b' },
      }),
      store.reserve(newOp('fine'), ev('reserved'), start()),
    ]);
    expect(refused.status).toBe('rejected');
    expect((refused as PromiseRejectedResult).reason).toMatchObject({
      code: 'unstorable_value',
      field: 'event.actor',
    });
    expect(await store.get('op-bad')).toBeNull();
    expect(await store.events('op-bad')).toEqual([]);
    expect(plain.status).toBe('fulfilled');
    expect(await trail(store, 'op-fine')).toHaveLength(2);
    await store.close();
  });
});
