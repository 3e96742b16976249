// After a write that ended SQLite's transaction is set aside, the rerun of the others can fail as a whole (COMMIT
// or BEGIN failing: the disk still full, SQLITE_BUSY from another process): every write of the batch must hear so.
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, newOp, openHandle, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('sqlite-full-rerun');
afterAll(tmp.remove);

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([
    p.then(
      () => 'fulfilled',
      () => 'rejected',
    ),
    new Promise<string>((r) => setTimeout(() => r('never settled'), ms)),
  ]);

it('every write of a batch settles when the rerun after an ended transaction fails to commit', async () => {
  const path = join(tmp.fresh(), 'ops.db');
  const real = await openHandle(path);
  let armed = false;
  const failCommit = () => {
    if (!armed) return false;
    armed = false;
    return true;
  };
  const db = new Proxy(real, {
    get(target, prop) {
      if (prop === 'prepare') {
        return (sql: string) => {
          const stmt = target.prepare(sql);
          if (!/^\s*COMMIT/i.test(sql)) return stmt;
          return new Proxy(stmt, {
            get(s, p) {
              if (p === 'run')
                return (...a: unknown[]) => {
                  if (failCommit()) {
                    // What a disk that is still full answers at COMMIT.
                    throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
                  }
                  return s.run(...a);
                };
              const v = Reflect.get(s, p, s);
              return typeof v === 'function' ? v.bind(s) : v;
            },
          });
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const store = await sqliteStore({ database: db });
  await store.reserve(newOp('seed'), ev('reserved'));
  const pages = Number((real.prepare('PRAGMA page_count').get() as { page_count: number }).page_count);
  real.exec(`PRAGMA max_page_count = ${pages + 8}`);
  const big = 'x'.repeat(200_000);
  armed = true;
  const calls = [
    store.reserve(newOp(1), ev('reserved')),
    store.reserve(newOp(2, { input: { big } }), ev('reserved')),
    store.reserve(newOp(3), ev('reserved')),
  ];
  const outcomes = await Promise.all(calls.map((c) => within(c, 1_000)));
  // op-1 and op-3 are rejected with the COMMIT error; op-2 (the write that ended the transaction) must be too.
  expect(outcomes).toEqual(['rejected', 'rejected', 'rejected']);
  await store.close();
  real.close();
});
