import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/cli/store.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import type { Lifecycle, OperationStore, PruneOptions } from '../../src/store/types.js';
import { runCli } from './support.js';

// Lets a test hand the command a wrapped store (one that counts prune calls, fails, or has no prune at all).
vi.mock('../../src/cli/store.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cli/store.js')>();
  return { ...real, openStore: vi.fn(real.openStore) };
});

const MINUTE = 60_000;
const DAY = 86_400_000;

let dir: string;
let db: string;
let store: OperationStore;
// How many events each seeded operation has, to check that the kept ones lost none.
let eventCounts: Map<string, number>;

// Reserved `requestedAgo` ms ago, then moved to `to` (settled, accepted, awaiting_approval) `changedAgo` ms ago.
async function seed(id: string, to: Lifecycle, changedAgo: number, requestedAgo = changedAgo + DAY) {
  const now = Date.now();
  const requestedAt = now - requestedAgo;
  const at = now - changedAgo;
  await store.reserve(
    {
      id,
      action: 'send_email',
      target: `email:${id}@example.com`,
      scope: {},
      fingerprint: `f-${id}`,
      idempotencyKey: `k-${id}`,
      runId: 'r',
      actor: null,
      input: {},
      requestedAt,
    },
    { type: 'reserved', at: requestedAt, from: null, to: 'requested', status: null, actor: null, attempt: 0 },
  );
  const status = to === 'settled' ? 'verified' : to === 'accepted' ? 'pending' : null;
  await store.transition(
    id,
    ['requested'],
    { lifecycle: to, status, attempt: 1 },
    { type: to, at, from: 'requested', to, status, actor: null, attempt: 1 },
  );
  expect((await store.get(id))?.updatedAt).toBe(at);
  eventCounts.set(id, (await store.events(id)).length);
}

// Settled 40 days ago, or just over 30: what `--older-than 30d` must delete.
const ELIGIBLE = ['old-1', 'old-2', 'old-3', 'old-4', 'edge-old'];
// Settled recently (though requested long ago), or still open or awaiting a reviewer however old: kept.
const KEPT = ['new-1', 'new-2', 'edge-new', 'open-1', 'await-1'];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-ops-prune-'));
  db = join(dir, 'ops.db');
  store = await sqliteStore({ path: db });
  eventCounts = new Map();
  for (const id of ['old-1', 'old-2', 'old-3', 'old-4']) await seed(id, 'settled', 40 * DAY);
  await seed('edge-old', 'settled', 30 * DAY + 5 * MINUTE);
  await seed('new-1', 'settled', DAY, 41 * DAY);
  await seed('new-2', 'settled', DAY, 41 * DAY);
  await seed('edge-new', 'settled', 30 * DAY - 5 * MINUTE);
  await seed('open-1', 'accepted', 40 * DAY);
  await seed('await-1', 'awaiting_approval', 40 * DAY);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The ids left in the store, sorted, after checking each has its events or, when gone, none. */
async function remaining(): Promise<string[]> {
  const ids = (await store.list()).map((r) => r.id).sort();
  for (const id of [...ELIGIBLE, ...KEPT]) {
    const events = await store.events(id);
    if (ids.includes(id)) expect(events.length, id).toBe(eventCounts.get(id));
    else {
      expect(await store.get(id), id).toBeNull();
      expect(events, id).toEqual([]);
    }
  }
  return ids;
}

/** Routes the next `openStore` through `wrap`, around the real store the command opens. */
function wrapNextStore(wrap: (real: OperationStore) => OperationStore): void {
  vi.mocked(openStore).mockImplementationOnce(async (spec, options) => {
    const real = await vi.importActual<typeof import('../../src/cli/store.js')>('../../src/cli/store.js');
    return wrap(await real.openStore(spec, options));
  });
}

/** Wraps the next store so every prune call's options and count are recorded in `calls`. */
function countPrunes(): { options: PruneOptions; deleted: number }[] {
  const calls: { options: PruneOptions; deleted: number }[] = [];
  wrapNextStore((real) => ({
    ...real,
    prune: async (options) => {
      const deleted = await real.prune!(options);
      calls.push({ options: { ...options }, deleted });
      // Let the clock move between batches, so a cutoff taken afresh per batch would show.
      await new Promise((done) => setTimeout(done, 2));
      return deleted;
    },
  }));
  return calls;
}

const prune = (...flags: string[]) => runCli(['ops', 'prune', '--store', db, ...flags]);

describe('readback ops prune', () => {
  it('seeds a store in which prune exists', async () => {
    expect(typeof store.prune).toBe('function');
    expect(await remaining()).toEqual([...ELIGIBLE, ...KEPT].sort());
  });

  it('--older-than 30d deletes exactly the settled operations last changed over 30 days ago, and their events', async () => {
    const before = Date.now();
    const r = await prune('--older-than', '30d');
    const after = Date.now();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const match = /^pruned 5 settled operations last changed before (\S+) \(and their events\)\n$/.exec(
      r.stdout,
    );
    const shown = match?.[1] ?? '';
    expect(shown, r.stdout).not.toBe('');
    // The full ISO time, to the millisecond: the cutoff as the store compared it.
    const cutoff = Date.parse(shown);
    expect(new Date(cutoff).toISOString()).toBe(shown);
    expect(cutoff).toBeGreaterThanOrEqual(before - 30 * DAY);
    expect(cutoff).toBeLessThanOrEqual(after - 30 * DAY);
    expect(await remaining()).toEqual([...KEPT].sort());
    // Open and awaiting operations are untouched, not just present.
    expect((await store.get('open-1'))?.lifecycle).toBe('accepted');
    expect((await store.get('await-1'))?.lifecycle).toBe('awaiting_approval');
  });

  it('takes every unit, and nothing left to prune is no error', async () => {
    // 5 weeks: only the operations settled 40 days ago.
    const weeks = await prune('--older-than', '5w');
    expect(weeks.code).toBe(0);
    expect(weeks.stdout).toMatch(/^pruned 4 settled operations /);
    // 30 days in hours: edge-old, settled 5 minutes before that; one operation, in the singular.
    const hours = await prune('--older-than', `${30 * 24}h`);
    expect(hours.stdout).toMatch(/^pruned 1 settled operation last changed before /);
    expect(await remaining()).toEqual([...KEPT].sort());

    const again = await prune('--older-than', '30d');
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /^pruned 0 settled operations last changed before \S+ \(and their events\)\n$/,
    );

    // 30 days less 10 minutes: edge-new, settled 30 days less 5 minutes ago.
    const minutes = await prune('--older-than', `${30 * 24 * 60 - 10}m`);
    expect(minutes.stdout).toMatch(/^pruned 1 settled operation /);
    // A day less a minute, then half a day: the operations settled a day ago.
    const seconds = await prune('--older-than', `${DAY / 1000 - 60}s`);
    expect(seconds.stdout).toMatch(/^pruned 2 settled operations /);
    const ms = await prune('--older-than', `${DAY / 2}ms`);
    expect(ms.stdout).toMatch(/^pruned 0 settled operations /);
    // However old, open and awaiting operations stay.
    expect(await remaining()).toEqual(['await-1', 'open-1']);
  });

  it('--limit 2 prunes all 5 eligible in batches of 2, every batch with the same cutoff', async () => {
    const calls = countPrunes();
    const r = await prune('--older-than', '30d', '--limit', '2', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(calls.map((c) => c.deleted)).toEqual([2, 2, 1]);
    const cutoff = calls[0]!.options.settledBefore;
    expect(calls.map((c) => c.options)).toEqual([
      { settledBefore: cutoff, limit: 2 },
      { settledBefore: cutoff, limit: 2 },
      { settledBefore: cutoff, limit: 2 },
    ]);
    expect(JSON.parse(r.stdout)).toEqual({
      pruned: 5,
      settledBefore: new Date(cutoff).toISOString(),
      settledBeforeMs: cutoff,
    });
    expect(await remaining()).toEqual([...KEPT].sort());
  });

  it('asks once more after a full batch, and passes the default batch size without --limit', async () => {
    const full = countPrunes();
    expect((await prune('--older-than', '30d', '--limit', '5')).code).toBe(0);
    expect(full.map((c) => c.deleted)).toEqual([5, 0]);
    expect(await remaining()).toEqual([...KEPT].sort());

    const plain = countPrunes();
    expect((await prune('--older-than', '1h')).code).toBe(0);
    expect(plain.map((c) => [c.options.limit, c.deleted])).toEqual([[1_000, 3]]);
  });

  it('--json prints one document with the count and the cutoff', async () => {
    const before = Date.now();
    const r = await prune('--json', '--older-than', '30d');
    const after = Date.now();
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { pruned: number; settledBefore: string; settledBeforeMs: number };
    expect(Object.keys(report)).toEqual(['pruned', 'settledBefore', 'settledBeforeMs']);
    expect(report.pruned).toBe(5);
    expect(report.settledBefore).toBe(new Date(report.settledBeforeMs).toISOString());
    expect(report.settledBeforeMs).toBeGreaterThanOrEqual(before - 30 * DAY);
    expect(report.settledBeforeMs).toBeLessThanOrEqual(after - 30 * DAY);
    expect(await remaining()).toEqual([...KEPT].sort());
    const none = JSON.parse((await prune('--json', '--older-than', '30d')).stdout) as { pruned: number };
    expect(none.pruned).toBe(0);
  });

  it('refuses a missing, zero, negative or unparsable --older-than, and a bad --limit, deleting nothing', async () => {
    vi.mocked(openStore).mockClear();
    const cases: [string[], string][] = [
      [[], "'readback ops prune' needs --older-than <duration>"],
      [['--older-than', 'abc'], "option '--older-than' needs a whole number above zero with a unit"],
      [['--older-than', '0d'], "got '0d'"],
      [['--older-than', '0'], "got '0'"],
      [['--older-than', '-5d'], "got '-5d'"],
      [['--older-than', '30'], "got '30'"],
      [['--older-than', '1.5d'], "got '1.5d'"],
      [['--older-than', '30x'], "got '30x'"],
      [['--older-than', '99999999999999w'], "got '99999999999999w'"],
      [['--older-than', '9000000000000000ms'], 'reaches back further than a date can'],
      [['--older-than', '30d', '--limit', '0'], "option '--limit' needs a whole number from 1 to 10000"],
      [['--older-than', '30d', '--limit', '10001'], "for prune; got '10001'"],
      [['--older-than', '30d', '--limit', 'two'], "got 'two'"],
      [['--older-than', '30d', '--status', 'verified'], "option '--status' does not apply"],
    ];
    for (const [flags, message] of cases) {
      const r = await prune(...flags);
      expect({ flags, code: r.code }).toEqual({ flags, code: 2 });
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n')[0]).toContain(message);
    }
    // The flags are checked before the store is opened: a bad duration is reported, not the missing store.
    const early = await runCli(['ops', 'prune', '--store', join(dir, 'nope.db'), '--older-than', 'abc']);
    expect(early.code).toBe(2);
    expect(early.stderr).toContain("option '--older-than'");
    expect(vi.mocked(openStore)).not.toHaveBeenCalled();
    expect(await remaining()).toEqual([...ELIGIBLE, ...KEPT].sort());
  });

  it('fails with exit 1 on a store without prune, deleting nothing', async () => {
    wrapNextStore(({ prune: _, ...rest }) => rest);
    const r = await prune('--older-than', '30d', '--json');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'readback: this store cannot prune: it has no prune method (a custom or older OperationStore); nothing was deleted\n',
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { kind: 'failed', exitCode: 1 } });
    expect(await remaining()).toEqual([...ELIGIBLE, ...KEPT].sort());
  });

  it('names the store and what was already pruned when a later batch fails', async () => {
    let calls = 0;
    wrapNextStore((real) => ({
      ...real,
      prune: async (options) => {
        if (++calls === 2) throw new Error('disk I/O error');
        return real.prune!(options);
      },
    }));
    const r = await prune('--older-than', '30d', '--limit', '2');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `readback: store ${db} failed during 'readback ops prune': disk I/O error (after pruning 2; run the command again to prune the rest)\n`,
    );
    expect((await remaining()).length).toBe(ELIGIBLE.length + KEPT.length - 2);
  });

  it('is in the help', async () => {
    const ops = await runCli(['ops', '--help']);
    expect(ops.code).toBe(0);
    expect(ops.stdout).toContain(
      'readback ops prune --older-than <duration> [--limit N] [--store S] [--json]',
    );
    expect(ops.stdout).toMatch(/--older-than <older-than> +prune: delete settled operations/);
    expect(ops.stdout).toContain('prune: operations deleted per batch (default 1000, at most 10000)');
    const general = await runCli(['--help']);
    expect(general.stdout).toMatch(/\n {2}ops +list, inspect, resolve and prune /);
    const missing = await runCli(['ops']);
    expect(missing.stderr).toContain('or prune');
  });
});
