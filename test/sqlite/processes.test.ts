import { execFile, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { compileSqliteStore } from '../fixtures/sqlite/compile.mjs';
import { ev, newOp, tempDir } from '../fixtures/sqlite/support.js';

// Separate processes are the real case for a file database: several agents or a reconciler beside
// them. The children run the real store code, transpiled from src (compile.mjs).
const run = promisify(execFile);
const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'sqlite');
const tmp = tempDir('processes');
let compiled: { entry: string; dir: string };

beforeAll(async () => {
  compiled = await compileSqliteStore();
}, 60_000);
afterAll(() => {
  tmp.remove();
  if (compiled) rmSync(compiled.dir, { recursive: true, force: true });
});

interface Outcome {
  worker: string;
  created: string[];
  executed: string[];
  claimed: string[];
}

describe('sqliteStore across processes', () => {
  it('racing processes on a fresh file: one record per key, one execution, one lease', async () => {
    const path = join(tmp.dir, 'race', 'ops.db');
    const keys = 40;
    // Far enough ahead that every child has started and opened the (not yet existing) file.
    const startAt = Date.now() + 1_500;
    const outcomes = await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map(async (worker) => {
        const { stdout } = await run(
          process.execPath,
          [join(FIXTURES, 'race-child.mjs'), compiled.entry, path, worker, String(keys), String(startAt)],
          { timeout: 60_000 },
        );
        return JSON.parse(stdout) as Outcome;
      }),
    );

    // The race was real: more than one process won some keys (each walks them in its own order).
    expect(outcomes.filter((o) => o.created.length > 0).length).toBeGreaterThan(1);
    const store = await sqliteStore({ path });
    const records = await store.list();
    expect(records).toHaveLength(keys);
    expect(new Set(records.map((r) => r.idempotencyKey)).size).toBe(keys);

    const created = outcomes.flatMap((o) => o.created).sort();
    const executed = outcomes.flatMap((o) => o.executed).sort();
    const claimed = outcomes.flatMap((o) => o.claimed).sort();
    const ids = records.map((r) => r.id).sort();
    expect(created).toEqual(ids);
    expect(executed).toEqual(ids);
    expect(claimed).toEqual(ids);

    for (const record of records) {
      expect(record).toMatchObject({ lifecycle: 'running', attempt: 1 });
      const events = await store.events(record.id);
      expect(events.map((e) => [e.seq, e.type])).toEqual([
        [1, 'reserved'],
        [2, 'executing'],
        [3, 'claimed'],
      ]);
      expect(events[2]!.actor).toBe(record.leaseOwner);
    }
    await store.close();
  }, 60_000);

  it('a write waits for another process’s lock within busy_timeout instead of failing', async () => {
    const path = join(tmp.dir, 'busy', 'ops.db');
    const store = await sqliteStore({ path }, { busyTimeoutMs: 10_000 });
    const holder = spawn(process.execPath, [join(FIXTURES, 'hold-lock.mjs'), path, '400'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const started = Date.now();
    const { created } = await store.reserve(newOp(1), ev('reserved'));
    expect(created).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(await exited).toBe(0);
    await store.close();
  }, 30_000);

  it('past busy_timeout the write fails with the driver’s busy error and changes nothing', async () => {
    const path = join(tmp.dir, 'busy-fail', 'ops.db');
    const store = await sqliteStore({ path }, { busyTimeoutMs: 50 });
    const holder = spawn(process.execPath, [join(FIXTURES, 'hold-lock.mjs'), path, '1500'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    await expect(store.reserve(newOp(1), ev('reserved'))).rejects.toMatchObject({ code: 'SQLITE_BUSY' });
    await exited;
    expect(await store.get('op-1')).toBeNull();
    expect((await store.reserve(newOp(1), ev('reserved'))).created).toBe(true);
    await store.close();
  }, 30_000);
});
