// SQLITE_FULL (a real one, from max_page_count) inside a batch and on a lone write.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, newOp, openHandle, T0, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('sqlite-full');
afterAll(tmp.remove);

/**
 * A store on a file with room for 8 more pages, then four writes at once: small reserves of op-1 and op-3, one of
 * op-2 too big for the file, and a transition of the seed operation.
 */
async function nearlyFull(groupCommit: boolean) {
  const path = join(tmp.fresh(), 'ops.db');
  const db = await openHandle(path);
  const store = await sqliteStore({ database: db }, { groupCommit });
  await store.reserve(newOp('seed'), ev('reserved'));
  const pages = Number((db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count);
  db.exec(`PRAGMA max_page_count = ${pages + 8}`);
  const big = 'x'.repeat(200_000);
  const results = await Promise.allSettled([
    store.reserve(newOp(1), ev('reserved')),
    store.reserve(newOp(2, { input: { big } }), ev('reserved')),
    store.reserve(newOp(3), ev('reserved')),
    store.transition('op-seed', ['requested'], { lifecycle: 'executing' }, ev('x', T0 + 1)),
  ]);
  return { path, db, store, big, results };
}

describe('SQLite store under SQLITE_FULL', () => {
  it('a write too big for the file fails alone in a batch; the others commit; the store goes on', async () => {
    const { path, db, store, results } = await nearlyFull(true);
    // As if made one after another: SQLite ends the whole transaction on SQLITE_FULL, and the batch runs again
    // without the write that caused it, so only op-2 fails.
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(db.inTransaction).toBe(false);
    expect((await store.list()).map((r) => r.id).sort()).toEqual(['op-1', 'op-3', 'op-seed']);
    // Everything acknowledged is in the file, as another connection sees it.
    const other = await openHandle(path);
    expect(other.prepare('SELECT COUNT(*) AS n FROM readback_operations').get()).toEqual({ n: 3 });
    other.close();
    await store.close();
    db.close();
  });

  it('the same calls one by one (groupCommit: false): only the oversized write fails', async () => {
    const { db, store, big, results } = await nearlyFull(false);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    // A lone write that fails leaves no transaction behind.
    await expect(
      store.transition('op-seed', ['executing'], { baseline: { big } }, ev('y', T0 + 2)),
    ).rejects.toThrow();
    expect(db.inTransaction).toBe(false);
    expect((await store.transition('op-seed', ['executing'], { reads: 1 }, ev('z', T0 + 3)))?.reads).toBe(1);
    await store.close();
    db.close();
  });
});
