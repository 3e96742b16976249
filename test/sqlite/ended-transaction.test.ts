// A write whose statement fails with an error after which SQLite has ended the whole transaction (as it may on
// SQLITE_IOERR / SQLITE_FULL / SQLITE_NOMEM), while the reserve body catches that error and answers from a
// lookup instead: the batch's later writes then run outside any transaction (each statement committed on its
// own), and the batch's COMMIT fails, so their callers are told they failed although they are in the file.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SqliteLike, SqliteStatement } from '../../src/sqlite/driver.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, type Handle, newOp, openHandle, T0, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('ended-transaction');
afterAll(tmp.remove);

/** A handle whose operation INSERT for one id fails as an I/O error that made SQLite roll the transaction back. */
function faulty(db: Handle) {
  const state = { failInsertOf: undefined as string | undefined };
  const handle: SqliteLike = {
    prepare(sql: string): SqliteStatement {
      const statement = db.prepare(sql);
      if (!sql.trimStart().startsWith('INSERT INTO readback_operations')) return statement;
      return {
        run: (...params: unknown[]) => {
          if (params[0] === state.failInsertOf) {
            state.failInsertOf = undefined;
            // What SQLite does on some I/O errors: the whole transaction is rolled back automatically.
            db.exec('ROLLBACK');
            throw Object.assign(new Error('simulated: disk I/O error'), { code: 'SQLITE_IOERR' });
          }
          return statement.run(...params);
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
  return { handle, state };
}

describe('a transaction SQLite ended under a write that caught the error', () => {
  it('a write rejected to its caller is not left committed', async () => {
    const path = join(tmp.fresh(), 'ops.db');
    const db = await openHandle(path);
    const { handle, state } = faulty(db);
    const store = await sqliteStore({ database: handle });
    await Promise.all([1, 2, 3].map((i) => store.reserve(newOp(i), ev('reserved'))));

    state.failInsertOf = 'op-retry';
    const results = await Promise.allSettled([
      store.transition('op-2', ['requested'], { lifecycle: 'executing', attempt: 1 }, ev('x', T0 + 1)),
      // A repeat of op-1's key (queued behind the write above, so it takes the write path).
      store.reserve(newOp('retry', { idempotencyKey: 'key-1' }), ev('reserved')),
      store.transition('op-3', ['requested'], { lifecycle: 'executing', attempt: 1 }, ev('x', T0 + 1)),
    ]);
    const op3 = await store.get('op-3');
    const op3Events = (await store.events('op-3')).map((e) => e.type);
    // Whatever the store answered, it must match the file: rejected means not written.
    if (results[2]!.status === 'rejected') {
      expect(op3?.lifecycle).toBe('requested');
      expect(op3Events).toEqual(['reserved']);
    } else {
      expect(op3?.lifecycle).toBe('executing');
    }
    expect(db.inTransaction).toBe(false);
    await store.close();
    db.close();
  });
});
