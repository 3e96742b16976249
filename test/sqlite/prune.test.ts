// Retention on a file two connections write: runs go on while another connection prunes, and the prune never
// takes an operation that is still open nor leaves an event behind without its operation.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { setStatusAction } from '../fixtures/set-status.js';
import { openHandle, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('prune');
afterAll(() => tmp.remove());

describe('sqliteStore prune beside live writers', () => {
  it('runs on one connection and prunes on another: every run verifies, no open operation or stray event', async () => {
    const path = join(tmp.fresh(), 'ops.db');
    const writer = await sqliteStore({ path });
    const pruner = await sqliteStore({ path });
    const rows = new Map<string, string>();
    // A turn of the event loop inside each effect, so the pruner's writes land between a run's own.
    const action = setStatusAction(rows, { yieldInExecute: true });
    const runner = createRunner({ store: writer });

    let running = true;
    let pruned = 0;
    let sweeps = 0;
    const sweeping = (async () => {
      while (running) {
        // Everything settled so far is old enough: the cutoff is in the future.
        pruned += await pruner.prune!({ settledBefore: Date.now() + 60_000, limit: 7 });
        sweeps++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const statuses: string[] = [];
    for (let wave = 0; wave < 10; wave++) {
      const completions = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          runner.run(action, { id: `r${wave}-${i}`, status: 'done' }, { runId: 'prune' }),
        ),
      );
      statuses.push(...completions.map((c) => c.status));
    }
    running = false;
    await sweeping;
    expect(statuses).toEqual(Array(80).fill('verified'));
    expect(sweeps).toBeGreaterThan(1);
    // The sweeps deleted while the runs went on, not only after them.
    expect(pruned).toBeGreaterThan(0);

    // What the sweeps missed goes now; then nothing is left, and no event outlived its operation.
    pruned += await pruner.prune!({ settledBefore: Date.now() + 60_000, limit: 10_000 });
    expect(pruned).toBe(80);
    expect(await writer.list()).toEqual([]);
    const db = await openHandle(path);
    const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
    expect(count('SELECT count(*) AS n FROM readback_events')).toBe(0);
    expect(count('SELECT count(*) AS n FROM readback_operations')).toBe(0);
    db.close();
    await writer.close();
    await pruner.close();
  });
});
