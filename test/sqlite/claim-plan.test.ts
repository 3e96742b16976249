import { describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import {
  CLAIMABLE_LIFECYCLES,
  SELECT_DUE,
  selectDueByActionParams,
  selectDueByActionSql,
  selectDueParams,
} from '../../src/sqlite/sql.js';
import { ALL, ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { openHandle } from '../fixtures/sqlite/support.js';

// A reconciler claims a few due operations at a time. The due index is (lifecycle, next_poll_at), so one query
// over every claimable lifecycle read and sorted all due rows on each claim (12 ms per claim of 32 with 20 000
// due); the claim must be one ordered walk per lifecycle that stops after `limit` rows.
describe('the SQLite claim of due operations', () => {
  it('walks the due index once per claimable lifecycle and sorts only what those walks return', async () => {
    const handle = await openHandle();
    const store = await sqliteStore({ database: handle });
    try {
      for (let n = 0; n < 200; n++) {
        await store.reserve(newOp(n), ev('reserved'));
        const lifecycle = CLAIMABLE_LIFECYCLES[n % CLAIMABLE_LIFECYCLES.length]!;
        await store.transition(`op-${n}`, ALL, { lifecycle, nextPollAt: T0 + n }, ev(lifecycle));
      }
      const plan = (
        handle.prepare(`EXPLAIN QUERY PLAN ${SELECT_DUE}`).all(...selectDueParams(T0 + 500, null, 32)) as {
          detail: string;
        }[]
      ).map((row) => row.detail);
      const reads = plan.filter((line) => /^(SEARCH|SCAN) readback_operations\b/.test(line));
      expect(reads, plan.join('\n')).toEqual(
        CLAIMABLE_LIFECYCLES.map(
          () =>
            'SEARCH readback_operations USING INDEX readback_operations_due (lifecycle=? AND next_poll_at<?)',
        ),
      );
      // Each walk sorts only ties of next_poll_at as it goes; the one full sort is of at most 5 × 32 rows.
      expect(
        plan.filter((line) => line === 'USE TEMP B-TREE FOR ORDER BY'),
        plan.join('\n'),
      ).toHaveLength(1);
      expect(plan.at(-1), plan.join('\n')).toBe('USE TEMP B-TREE FOR ORDER BY');

      const claimed = await store.claimDue(32, 1_000, 'worker-1', T0 + 500);
      expect(claimed.map((c) => c.record.id)).toEqual(Array.from({ length: 32 }, (_, n) => `op-${n}`));
    } finally {
      await store.close();
    }
  });
});

// A reconciler names its actions. On a file shared with other services, the walk above reads past every due
// operation of theirs that comes first in time; with the actions named, each is walked on its own index.
describe('the SQLite claim of one service’s due operations on a shared file', () => {
  it('walks (action, lifecycle, next_poll_at) once per named action and lifecycle, never the others’ rows', async () => {
    const handle = await openHandle();
    const store = await sqliteStore({ database: handle });
    try {
      // 300 due operations of another service first in time, then 40 of ours, then 300 more of theirs.
      const seed = async (n: number, action: string, due: number) => {
        await store.reserve({ ...newOp(n), action }, ev('reserved'));
        await store.transition(`op-${n}`, ALL, { lifecycle: 'running', nextPollAt: due }, ev('running'));
      };
      for (let n = 0; n < 300; n++) await seed(n, 'theirs', T0 + n);
      for (let n = 300; n < 340; n++) await seed(n, 'mine', T0 + n);
      for (let n = 340; n < 640; n++) await seed(n, n % 2 ? 'theirs' : 'also_theirs', T0 + n);

      const sql = selectDueByActionSql(2);
      const plan = (
        handle
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(...selectDueByActionParams(T0 + 1_000, ['mine', 'x'], 32)) as {
          detail: string;
        }[]
      ).map((row) => row.detail);
      const reads = plan.filter((line) => /^(SEARCH|SCAN) readback_operations\b/.test(line));
      expect(reads, plan.join('\n')).toEqual(
        Array.from(
          { length: 2 * CLAIMABLE_LIFECYCLES.length },
          () =>
            'SEARCH readback_operations USING INDEX readback_operations_due_by_action (action=? AND lifecycle=? AND next_poll_at<?)',
        ),
      );

      // The same operations in the same order as the one-walk form, which filters by action as it goes; a name
      // given twice claims nothing twice.
      const oneWalk = (
        handle.prepare(SELECT_DUE).all(...selectDueParams(T0 + 1_000, JSON.stringify(['mine']), 32)) as {
          id: string;
        }[]
      ).map((row) => row.id);
      expect(oneWalk).toEqual(Array.from({ length: 32 }, (_, n) => `op-${300 + n}`));
      const claimed = await store.claimDue(32, 1_000, 'worker-1', T0 + 1_000, { actions: ['mine', 'mine'] });
      expect(claimed.map((c) => c.record.id)).toEqual(oneWalk);
      const rest = await store.claimDue(32, 1_000, 'worker-2', T0 + 1_000, { actions: ['mine'] });
      expect(rest.map((c) => c.record.id)).toEqual(Array.from({ length: 8 }, (_, n) => `op-${332 + n}`));
    } finally {
      await store.close();
    }
  });
});
