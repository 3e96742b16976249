// Reconciler processes under faults, on the shared Postgres: a worker killed with SIGKILL while it holds
// leases, a worker frozen with SIGSTOP past its lease and thawed with SIGCONT, and every worker's backend
// terminated mid-run with pg_terminate_backend. After each, every operation must have been executed once
// (the fake target's effect log) and settled once (the event log). Same skip/fail rule as the other
// Postgres tests.
import { afterAll, describe, expect, it } from 'vitest';
import {
  expectExactlyOnce,
  killAll,
  openCount,
  removeWorkerScript,
  seedInDoubt,
  startWorker,
  startWorkers,
  stopWorkers,
  type Worker,
  waitDrained,
  waitFor,
  withClient,
  workerScript,
} from './fleet.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema } = await pgSuite();
afterAll(removeWorkerScript);

async function prepare(count: number): Promise<string> {
  const schema = tempSchema();
  await workerScript();
  await seedInDoubt(PG_URL, schema, count);
  return schema;
}

/** Rows of one query, with a short-lived client. */
function query<Row>(text: string, values: unknown[] = []): Promise<Row[]> {
  return withClient(PG_URL, async (db) => (await db.query(text, values)).rows as Row[]);
}

interface Held {
  id: string;
  lease_expires_at: number;
}

interface LoggedEvent {
  seq: number;
  type: string;
  actor: string | null;
  detail: { owner?: string; leaseExpiresAt?: number } | null;
}

/** An operation's events in order. */
function eventsOf(schema: string, id: string): Promise<LoggedEvent[]> {
  return query<LoggedEvent>(
    `SELECT seq, type, actor, detail FROM "${schema}".events WHERE operation_id = $1 ORDER BY seq`,
    [id],
  );
}

/**
 * Checks that `held` (leased to `gone` when it stopped) was taken over by another owner only once the
 * lease had lapsed on the database clock, and settled by that other owner, never by `gone`.
 */
async function expectTakenOverAfterExpiry(schema: string, held: Held, gone: string, leaseMs: number) {
  const events = await eventsOf(schema, held.id);
  const takeover = events.find(
    (e) => e.type === 'claimed' && e.actor !== gone && e.seq > lastClaimBy(events, gone),
  );
  if (takeover === undefined) throw new Error(`operation ${held.id} was never claimed again`);
  // The claim's expiry is the database's now + leaseMs, so its now was at or after the old lease's end.
  expect(Number(takeover.detail?.leaseExpiresAt) - leaseMs).toBeGreaterThanOrEqual(held.lease_expires_at);
  const settled = events.filter((e) => e.type === 'settled');
  expect(settled).toHaveLength(1);
  expect(settled[0]!.actor).not.toBe(gone);
  expect(events.filter((e) => e.actor === gone && e.seq > takeover.seq)).toEqual([]);
}

function lastClaimBy(events: LoggedEvent[], owner: string): number {
  return Math.max(0, ...events.filter((e) => e.type === 'claimed' && e.actor === owner).map((e) => e.seq));
}

describe.skipIf(!available)('reconciler processes under faults (Postgres)', () => {
  it('kill -9 of a worker holding leases: the others take over once the leases lapse', async () => {
    const OPS = 600;
    const LEASE_MS = 1_500;
    const schema = await prepare(OPS);
    const tag = schema.slice(-6);
    const workers: Worker[] = [];
    try {
      // The victim reads slowly (its heartbeats keep those leases alive) and says when a read starts.
      const victim = await startWorker(PG_URL, {
        app: `rb-kill-${tag}-victim`,
        schema,
        owner: 'victim',
        leaseMs: LEASE_MS,
        concurrency: 8,
        observeDelayMs: 3_000,
        announceObserve: true,
      });
      workers.push(victim);
      await waitFor(
        'the victim to be mid-read',
        async () => (await query(`SELECT 1 FROM "${schema}".observing WHERE worker = 'victim'`)).length > 0,
        15_000,
        20,
      );
      await startWorkers(workers, PG_URL, 3, {
        app: `rb-kill-${tag}`,
        owner: 'kill',
        schema,
        leaseMs: LEASE_MS,
        concurrency: 8,
      });
      victim.child.kill('SIGKILL');
      expect(await victim.exited).toEqual({ code: null, signal: 'SIGKILL' });
      const held = await query<Held>(
        `SELECT id, lease_expires_at::float8 AS lease_expires_at FROM "${schema}".operations WHERE lease_owner = 'victim'`,
      );
      expect(held.length).toBeGreaterThan(0);

      await waitDrained(PG_URL, schema);
      const reports = await stopWorkers(workers.slice(1));
      await expectExactlyOnce(PG_URL, schema, OPS);
      for (const h of held) await expectTakenOverAfterExpiry(schema, h, 'victim', LEASE_MS);
      expect(reports.map((r) => r.errors)).toEqual([0, 0, 0]);
    } finally {
      killAll(workers);
    }
  }, 60_000);

  it('SIGSTOP past the lease, then SIGCONT: the late completion and heartbeat change 0 rows', async () => {
    const OPS = 300;
    const LEASE_MS = 1_200;
    const schema = await prepare(OPS);
    const tag = schema.slice(-6);
    const workers: Worker[] = [];
    try {
      // One operation at a time, so when the zombie announces a read, that read is all it is doing.
      const zombie = await startWorker(PG_URL, {
        app: `rb-stop-${tag}-zombie`,
        schema,
        owner: 'zombie',
        leaseMs: LEASE_MS,
        concurrency: 1,
        observeDelayMs: 1_500,
        announceObserve: true,
      });
      workers.push(zombie);
      let stalled: string | undefined;
      await waitFor(
        'the zombie to be mid-read',
        async () => {
          const [row] = await query<{ op_id: string }>(
            `SELECT op_id FROM "${schema}".observing WHERE worker = 'zombie' LIMIT 1`,
          );
          if (row) {
            zombie.child.kill('SIGSTOP');
            stalled = row.op_id;
          }
          return row !== undefined;
        },
        15_000,
        10,
      );
      const [held] = await query<Held & { lease_owner: string }>(
        `SELECT id, lease_owner, lease_expires_at::float8 AS lease_expires_at FROM "${schema}".operations WHERE id = $1`,
        [stalled],
      );
      expect(held).toMatchObject({ id: stalled, lease_owner: 'zombie' });
      await startWorkers(workers, PG_URL, 3, {
        app: `rb-stop-${tag}`,
        owner: 'stop',
        schema,
        leaseMs: LEASE_MS,
        concurrency: 8,
      });
      await waitDrained(PG_URL, schema);

      // Thaw the zombie: its read finishes and it tries to write under its old token. SIGTERM lets the
      // in-flight drive finish before the worker reports.
      zombie.child.kill('SIGCONT');
      zombie.child.kill('SIGTERM');
      const [late, ...others] = await stopWorkers(workers);
      expect(late!.refusedIds).toContain(stalled);
      expect(late!.leasesLost).toBeGreaterThanOrEqual(1);
      expect(late!.claimed).toBe(1);
      for (const r of others) expect(r.refused).toBe(0);

      await expectExactlyOnce(PG_URL, schema, OPS);
      await expectTakenOverAfterExpiry(schema, held!, 'zombie', LEASE_MS);
    } finally {
      killAll(workers);
    }
  }, 60_000);

  it('pg_terminate_backend on every worker backend mid-run: they reconnect and finish, losing nothing', async () => {
    const OPS = 1_500;
    const schema = await prepare(OPS);
    const app = `rb-term-${schema.slice(-6)}`;
    const workers: Worker[] = [];
    try {
      await startWorkers(workers, PG_URL, 4, { app, owner: 'term', schema, leaseMs: 3_000, concurrency: 8 });
      const terminated: number[] = [];
      for (const left of [0.8, 0.55, 0.3]) {
        await waitFor(
          `${Math.round((1 - left) * 100)}% settled`,
          async () => (await openCount(PG_URL, schema)) <= OPS * left,
          30_000,
          50,
        );
        // Only these workers' backends: the server is shared with other suites.
        const killed = await query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1 AND pg_terminate_backend(pid)`,
          [`${app}-%`],
        );
        terminated.push(killed.length);
      }
      await waitDrained(PG_URL, schema);
      const reports = await stopWorkers(workers);
      for (const n of terminated) expect(n).toBeGreaterThan(0);
      await expectExactlyOnce(PG_URL, schema, OPS);
      for (const r of reports) expect(r.claimed).toBeGreaterThan(0);
    } finally {
      killAll(workers);
    }
  }, 60_000);
});
