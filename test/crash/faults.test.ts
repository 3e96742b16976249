import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Completion, createRunner, type ReconcileReport } from '../../src/index.js';
import { loadBetterSqlite3, type SqliteLike } from '../../src/sqlite/driver.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { type CrashOp, crashActions } from './actions.js';
import { checkLane } from './checker.js';
import { compileCrashChild } from './compile.mjs';
import { recover, rng, runChild } from './support.js';
import { Target } from './target.js';

// The other faults of issue 3, section 6: two processes writing one store file at once, and a store
// that cannot take a write (read-only, full). A store that cannot record must stop the run before execute.
let compiled: { child: string; dir: string };
const root = mkdtempSync(join(tmpdir(), 'readback-faults-'));
let n = 0;
const fresh = () => join(root, `case-${n++}`);

beforeAll(async () => {
  compiled = await compileCrashChild();
}, 60_000);
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  if (compiled) rmSync(compiled.dir, { recursive: true, force: true });
});

describe('two processes writing one store file', () => {
  it('both finish, busy waits are absorbed, no write is lost, shared keys execute once', async () => {
    const dir = fresh();
    const storePath = join(dir, 'ops.db');
    const targetPath = join(dir, 'target.db');
    const r = rng(7);
    const op = (key: string): CrashOp => {
      const kind = r.pick(['ledger', 'bump', 'job'] as const);
      if (kind === 'ledger') return { kind, key, amount: r.int(1, 100) };
      if (kind === 'bump') return { kind, key };
      return { kind, key, durationMs: r.int(20, 150), outcome: 'succeeded' };
    };
    // Ten keys both processes run (the same request twice), thirty each of their own.
    const shared = Array.from({ length: 10 }, (_, i) => op(`shared-${i}`));
    const own = (w: string) => Array.from({ length: 30 }, (_, i) => op(`${w}-${i}`));
    const ops = { a: [...shared, ...own('a')], b: [...[...shared].reverse(), ...own('b')] };
    // Create both files first, so the children race on writes rather than on creating the schema.
    const target = await Target.open(targetPath);
    const store = await sqliteStore({ path: storePath });
    const exits = await Promise.all(
      (['a', 'b'] as const).map((w) =>
        runChild(compiled.child, {
          role: 'run',
          storePath,
          targetPath,
          ops: ops[w],
          concurrency: 6,
          wait: true,
          leaseMs: 1_000,
          failpoint: { name: 'none' },
          giveUpAfterMs: 10_000,
        }),
      ),
    );
    for (const exit of exits) {
      expect(exit.stderr).toBe('');
      expect(exit.code).toBe(0);
    }
    const statuses = exits.map((e) => e.lines.find((l) => l.done)!.statuses as Record<string, string>);
    // The writers really overlapped: both wrote records while the other was running.
    const records = await store.list();
    const pids = new Set(records.map((rec) => rec.runId));
    expect(pids.size).toBe(2);

    const reports: ReconcileReport[] = [];
    await recover(store, crashActions(target), 'two writers', reports);
    const all = [...ops.a, ...ops.b.slice(shared.length)];
    const result = await checkLane(store, target, all);
    expect(result.violations).toEqual([]);
    expect(reports.every((rep) => rep.errors === 0)).toBe(true);
    // No lost writes: every key has its record and a complete, settled event log.
    expect(await store.list()).toHaveLength(all.length);
    for (const o of all) {
      const rec = await store.getByKey(o.key);
      expect(rec, o.key).not.toBeNull();
      expect(rec!.lifecycle, o.key).toBe('settled');
      expect(rec!.status, o.key).toBe('verified');
      const events = await store.events(rec!.id);
      expect(events[0]!.type).toBe('reserved');
      expect(events.some((e) => e.type === 'executing')).toBe(true);
      expect(events.at(-1)!.to).toBe('settled');
    }
    // Busy handling: no run saw the store fail. A run may still end unknown for the fake provider's own sake (under
    // load its write can fail ambiguously: unknown/in_flight), which the recovery above settled verified.
    for (const s of statuses) {
      expect(Object.entries(s).filter(([, v]) => v.endsWith('/store_unavailable'))).toEqual([]);
      const open = Object.entries(s).filter(([, v]) => !['verified', 'pending'].includes(v.split('/')[0]!));
      for (const [key, v] of open) expect([key, v]).toEqual([key, 'unknown/in_flight']);
    }
    await store.close();
    target.close();
  }, 60_000);
});

/** Runs one operation of each kind against a store that cannot write; resolves to what each run gave. */
async function runAgainstBrokenStore(db: SqliteLike, targetPath: string) {
  const store = await sqliteStore({ database: db });
  return {
    store,
    breakAndRun: async (breakIt: () => void) => {
      const target = await Target.open(targetPath);
      const actions = crashActions(target);
      const runner = createRunner({ store, actions: actions.all });
      breakIt();
      const pad = 'x'.repeat(4_000);
      const ops: CrashOp[] = [
        { kind: 'ledger', key: `ledger-${pad}`.slice(0, 4_000), amount: 5 },
        { kind: 'bump', key: `bump-${pad}`.slice(0, 4_000) },
        { kind: 'job', key: `job-${pad}`.slice(0, 4_000), durationMs: 10, outcome: 'succeeded' },
      ];
      const results: { op: CrashOp; outcome: { completion?: Completion; error?: unknown } }[] = [];
      for (const op of ops) {
        try {
          results.push({
            op,
            outcome: { completion: await runner.run(actions.byKind[op.kind], op, { runId: 'broken' }) },
          });
        } catch (error) {
          results.push({ op, outcome: { error } });
        }
      }
      return { results, target };
    },
  };
}

/** Either answer is acceptable while the runner changes, and in both nothing may have executed. */
function expectRefusedBeforeExecute(
  results: { op: CrashOp; outcome: { completion?: Completion; error?: unknown } }[],
  target: Target,
  problem: RegExp,
) {
  console.log(
    results
      .map(({ op, outcome }) =>
        outcome.completion
          ? `${op.kind}: ${outcome.completion.status}/${outcome.completion.errorCode}: ${outcome.completion.reason}`
          : `${op.kind}: rejected: ${(outcome.error as Error)?.message}`,
      )
      .join('\n'),
  );
  for (const { op, outcome } of results) {
    if (outcome.completion) {
      expect(outcome.completion, op.kind).toMatchObject({
        status: 'failed',
        errorCode: 'store_unavailable',
        attempt: 0,
      });
      expect(outcome.completion.reason).toMatch(problem);
    } else {
      // Today's behaviour before the store_unavailable change: reserve's error escapes run().
      expect(String((outcome.error as Error)?.message ?? outcome.error)).toMatch(problem);
    }
  }
  expect(target.effects()).toEqual([]);
  expect(target.reads()).toEqual([]);
}

describe('a store that cannot take a write', () => {
  it('read-only (query_only): run refuses before execute, with a clear error, and nothing executes', async () => {
    const dir = fresh();
    const Database = await loadBetterSqlite3();
    mkdirSync(dir, { recursive: true });
    const db = new Database(join(dir, 'ops.db'));
    const { store, breakAndRun } = await runAgainstBrokenStore(db, join(dir, 'target.db'));
    const { results, target } = await breakAndRun(() => db.exec('PRAGMA query_only = ON'));
    expectRefusedBeforeExecute(results, target, /readonly|read-only|read only/i);
    db.exec('PRAGMA query_only = OFF');
    expect(await store.list()).toEqual([]);
    await store.close();
    db.close();
    target.close();
  });

  it('read-only file handle (mode=ro): refused at open or at run, never executed', async () => {
    const dir = fresh();
    const path = join(dir, 'ops.db');
    const writable = await sqliteStore({ path });
    await writable.close();
    const Database = (await loadBetterSqlite3()) as unknown as new (
      path: string,
      options: { readonly: boolean },
    ) => SqliteLike;
    const db = new Database(path, { readonly: true });
    let opened: Awaited<ReturnType<typeof runAgainstBrokenStore>> | undefined;
    try {
      opened = await runAgainstBrokenStore(db, join(dir, 'target.db'));
    } catch (error) {
      // Refusing the handle outright is the clearest answer: nothing could run at all.
      console.log(`read-only handle refused at open: ${(error as Error).message}`);
      expect(String((error as Error).message)).toMatch(/readonly|read-only|read only|cannot prepare/i);
    }
    if (opened) {
      const { results, target } = await opened.breakAndRun(() => {});
      expectRefusedBeforeExecute(results, target, /readonly|read-only|read only/i);
      target.close();
      await opened.store.close();
    }
    db.close();
  });

  it('full (max_page_count): run refuses before execute, with a clear error, and nothing executes', async () => {
    const dir = fresh();
    const Database = await loadBetterSqlite3();
    mkdirSync(dir, { recursive: true });
    const db = new Database(join(dir, 'ops.db'));
    const { store, breakAndRun } = await runAgainstBrokenStore(db, join(dir, 'target.db'));
    const { results, target } = await breakAndRun(() => {
      const { page_count } = db.prepare('PRAGMA page_count').get() as { page_count: number };
      db.exec(`PRAGMA max_page_count = ${page_count}`);
    });
    expectRefusedBeforeExecute(results, target, /full/i);
    expect(await store.list()).toEqual([]);
    await store.close();
    db.close();
    target.close();
  });
});
