import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import type { OperationStore } from '../../src/store/types.js';
import { ev, newOp, openHandle, T0, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('durability');
afterAll(tmp.remove);
let n = 0;
const freshPath = () => join(tmp.dir, `db-${++n}`, 'ops.db');

async function snapshot(store: OperationStore) {
  const records = await store.list();
  const events = await Promise.all(records.map((r) => store.events(r.id)));
  return { records, events };
}

describe('sqliteStore durability', () => {
  it('keeps every record and event across close and reopen', async () => {
    const path = freshPath();
    const first = await sqliteStore({ path });
    for (const k of [1, 2, 3]) await first.reserve(newOp(k), ev('reserved'));
    await first.transition('op-1', ['requested'], { lifecycle: 'executing', attempt: 1 }, ev('x', T0 + 1));
    await first.transition(
      'op-2',
      ['requested'],
      { lifecycle: 'accepted', status: 'pending', providerRef: { jobId: 'j-2' }, nextPollAt: T0 + 5 },
      ev('accepted', T0 + 2, { detail: { jobId: 'j-2' } }),
    );
    const [claim] = await first.claimDue(1, 60_000, 'worker', T0 + 5);
    const before = await snapshot(first);
    await first.close();

    const second = await sqliteStore({ path });
    expect(await snapshot(second)).toEqual(before);
    expect(before.records).toHaveLength(3);
    // The idempotency index survived: the same key finds the same record, and nothing new is logged.
    const again = await second.reserve(newOp('x', { idempotencyKey: 'key-3' }), ev('reserved', T0 + 9));
    expect(again).toEqual({ record: before.records[2], created: false });
    // The lease survived too: its token still writes, a stranger's does not.
    expect(
      await second.transition('op-2', ['accepted'], { reads: 1 }, ev('obs'), { leaseToken: 'stale' }),
    ).toBeNull();
    const leased = await second.transition('op-2', ['accepted'], { reads: 1 }, ev('obs', T0 + 6), {
      leaseToken: claim!.leaseToken,
    });
    expect(leased?.reads).toBe(1);
    await second.close();
  });

  it('leaves no write behind after close: a raw reader sees every row', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    for (const k of [1, 2]) await store.reserve(newOp(k), ev('reserved'));
    await store.close();
    const db = await openHandle(path);
    expect(db.prepare('SELECT COUNT(*) AS n FROM readback_operations').get()).toEqual({ n: 2 });
    expect(db.prepare('SELECT COUNT(*) AS n FROM readback_events').get()).toEqual({ n: 2 });
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    db.close();
  });

  it('two stores on one file see each other’s writes', async () => {
    const path = freshPath();
    const a = await sqliteStore({ path });
    const b = await sqliteStore({ path });
    await a.reserve(newOp(1), ev('reserved'));
    expect((await b.get('op-1'))?.lifecycle).toBe('requested');
    await b.transition('op-1', ['requested'], { lifecycle: 'running', nextPollAt: T0 }, ev('run', T0 + 1));
    expect((await a.get('op-1'))?.lifecycle).toBe('running');
    // A's stale view loses the compare-and-set that B already won.
    expect(await a.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('x'))).toBeNull();
    expect((await a.events('op-1')).map((e) => e.type)).toEqual(['reserved', 'run']);
    await a.close();
    // Closing one connection leaves the other working.
    expect(await b.list()).toHaveLength(1);
    await b.close();
  });

  it('concurrent reserves of one key from two connections create exactly one record', async () => {
    const path = freshPath();
    const stores = [await sqliteStore({ path }), await sqliteStore({ path })];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        stores[i % 2]!.reserve(newOp(`race-${i}`, { idempotencyKey: 'key-race' }), ev('reserved')),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.record.id)).size).toBe(1);
    for (const store of stores) expect(await store.list()).toHaveLength(1);
    await Promise.all(stores.map((s) => s.close()));
  });

  it('claims from two connections never lease one record twice', async () => {
    const path = freshPath();
    const [a, b] = [await sqliteStore({ path }), await sqliteStore({ path })];
    for (const k of [1, 2, 3, 4, 5]) {
      await a.reserve(newOp(k), ev('reserved'));
      await a.transition(`op-${k}`, ['requested'], { lifecycle: 'running', nextPollAt: T0 }, ev('run'));
    }
    const [x, y] = await Promise.all([
      a.claimDue(3, 10_000, 'a', T0 + 1),
      b.claimDue(3, 10_000, 'b', T0 + 1),
    ]);
    const ids = [...x!, ...y!].map((c) => c.record.id).sort();
    expect(ids).toEqual(['op-1', 'op-2', 'op-3', 'op-4', 'op-5']);
    await a.close();
    await b.close();
  });

  it('durability "normal" stores and reloads the same way', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path }, { durability: 'normal' });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const reopened = await sqliteStore({ path });
    expect((await reopened.get('op-1'))?.idempotencyKey).toBe('key-1');
    await reopened.close();
  });
});
