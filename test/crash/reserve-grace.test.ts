import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, memoryStore, type OperationStore, systemClock } from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { crashActions } from './actions.js';
import { Target } from './target.js';

// A run that dies right after reserve leaves its record in `requested`. The runner reserves it with
// nextPollAt = now + verifyTimeoutMs + 30 s (REQUESTED_GRACE_MS), so that a reconciler past that grace
// settles it failed/not_executed and leaves it re-runnable. The memory store keeps that nextPollAt; the
// SQLite store writes next_poll_at = NULL on reserve (src/sqlite/store.ts), so on SQLite no reconciler
// ever picks the record up: it stays `requested` with no status forever. Nothing executed either way.
const root = mkdtempSync(join(tmpdir(), 'readback-grace-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Reserves through a real run, then "dies": the run never gets past its reservation. */
async function crashAfterReserve(store: OperationStore, target: Target) {
  const dying: OperationStore = {
    ...store,
    async reserve(op, event) {
      await store.reserve(op, event);
      return new Promise(() => {});
    },
  };
  const actions = crashActions(target);
  void createRunner({ store: dying, actions: actions.all }).run(
    actions.bump,
    { kind: 'bump', key: 'k-1' },
    { runId: 'r' },
  );
  for (let i = 0; i < 100 && !(await store.getByKey('k-1')); i++) await systemClock.sleep(5);
  return actions;
}

async function afterTheGrace(store: OperationStore, target: Target) {
  const actions = await crashAfterReserve(store, target);
  const reserved = await store.getByKey('k-1');
  expect(reserved).toMatchObject({ lifecycle: 'requested', attempt: 0 });
  const later = { now: () => Date.now() + 40_000, sleep: systemClock.sleep };
  const report = await createRunner({ store, clock: later, actions: actions.all }).reconcile({ once: true });
  return { reserved: reserved!, report, record: (await store.getByKey('k-1'))! };
}

describe('a crash right after reserve', () => {
  it('memory store: the record is due after the reserve grace and settles failed/not_executed', async () => {
    const target = await Target.open(join(root, 'memory', 'target.db'));
    const { reserved, report, record } = await afterTheGrace(memoryStore(), target);
    expect(reserved.nextPollAt).not.toBeNull();
    expect(report.claimed).toBe(1);
    expect(record).toMatchObject({ lifecycle: 'requested', status: 'failed', attempt: 0 });
    expect(record.completion?.errorCode).toBe('not_executed');
    expect(target.effects()).toEqual([]);
    target.close();
  });

  // Regression: the SQLite store once dropped NewOperation.nextPollAt on reserve, so a run that died right
  // after reserving was never claimed by any reconciler.
  it('SQLite store: the record is due after the reserve grace and settles failed/not_executed', async () => {
    const store = await sqliteStore({ path: join(root, 'sqlite', 'ops.db') });
    const target = await Target.open(join(root, 'sqlite', 'target.db'));
    try {
      const { reserved, report, record } = await afterTheGrace(store, target);
      expect(target.effects()).toEqual([]);
      expect(reserved.nextPollAt).not.toBeNull();
      expect(report.claimed).toBe(1);
      expect(record).toMatchObject({ lifecycle: 'requested', status: 'failed', attempt: 0 });
    } finally {
      await store.close();
      target.close();
    }
  });
});
