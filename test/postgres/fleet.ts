// The harness of the Postgres fleet tests: compiles test/postgres/fleet-worker.ts for child processes,
// seeds operations left in doubt by "crashed runs", starts and stops worker processes, and checks the
// outcome against the fake target's own effect log and the store's event log.
import { type ChildProcess, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { compileSources } from '../support/compile.mjs';
import type { WorkerConfig, WorkerReport } from './fleet-worker.js';

let compiled: Promise<string> | undefined;

/** The compiled worker script, built once per test file. */
export function workerScript(): Promise<string> {
  compiled ??= compileSources(['test/postgres/fleet-worker.ts'], 'pg-fleet').then((dir) =>
    join(dir, 'test/postgres/fleet-worker.js'),
  );
  return compiled;
}

/** Removes the compiled worker. */
export async function removeWorkerScript(): Promise<void> {
  if (!compiled) return;
  const script = await compiled;
  await rm(join(script, '../../..'), { recursive: true, force: true });
}

/** `url` with `application_name` set, so a test can find (and terminate) exactly this worker's backends. */
export function withAppName(url: string, name: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/** A running worker process. */
export interface Worker {
  owner: string;
  child: ChildProcess;
  /** Resolves with the worker's final report once it exits after SIGTERM; rejects on any other exit. */
  done: Promise<WorkerReport>;
  /** Resolves with how the process ended, whatever the reason. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts one worker; `app` prefixes the application_name of its store and target connections. */
export async function startWorker(
  url: string,
  options: Omit<WorkerConfig, 'storeUrl' | 'targetUrl'> & { app: string },
): Promise<Worker> {
  const { app, ...rest } = options;
  const config: WorkerConfig = {
    ...rest,
    storeUrl: withAppName(url, `${app}-store`),
    targetUrl: withAppName(url, `${app}-target`),
  };
  // The IPC channel is how a worker learns its test process is gone (see fleet-worker.ts).
  const child = spawn(process.execPath, [await workerScript(), JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    stdout += d;
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const done = exited.then(({ code, signal }) => {
    const line = stdout.trim().split('\n').at(-1);
    if (code !== 0 || !line)
      throw new Error(`worker ${config.owner} exited with ${signal ?? code}: ${stderr}`);
    return JSON.parse(line) as WorkerReport;
  });
  // Tests that kill a worker never read `done`; keep its rejection from going unhandled.
  done.catch(() => undefined);
  return { owner: config.owner, child, done, exited };
}

/**
 * Starts `count` workers with no observe delay, named `${app}-w${i}` and owned by `${owner}-w${i}`, each
 * added to `workers` as soon as it runs (so killAll in a `finally` also ends a partial start).
 */
export async function startWorkers(
  workers: Worker[],
  url: string,
  count: number,
  options: { app: string; owner: string; schema: string; leaseMs: number; concurrency: number },
): Promise<void> {
  const { app, owner, ...rest } = options;
  for (let i = 0; i < count; i++) {
    workers.push(
      await startWorker(url, { ...rest, app: `${app}-w${i}`, owner: `${owner}-w${i}`, observeDelayMs: 0 }),
    );
  }
}

/** Asks workers to stop (SIGTERM) and collects their reports. */
export async function stopWorkers(workers: Worker[]): Promise<WorkerReport[]> {
  for (const w of workers) w.child.kill('SIGTERM');
  return Promise.all(workers.map((w) => w.done));
}

/** Kills whatever is still running, for `finally` blocks. */
export function killAll(workers: Worker[]): void {
  for (const w of workers) {
    if (w.child.exitCode === null && w.child.signalCode === null) {
      w.child.kill('SIGCONT');
      w.child.kill('SIGKILL');
    }
  }
}

/** Runs `fn` with a short-lived client (so a server restart between calls does not matter). */
export async function withClient<T>(url: string, fn: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => undefined);
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end().catch(() => undefined);
  }
}

/**
 * Creates the store schema (through the store, so migrations run) and the fake target's tables, then
 * inserts `count` operations as a run that crashed mid-execute leaves them: lifecycle `executing`,
 * attempt 1, the in-flight window long over, due now. The target has no effect for any of them, so a
 * reconciler reads back, proves absence and executes each once.
 */
export async function seedInDoubt(url: string, schema: string, count: number): Promise<void> {
  const store = await postgresStore({ connectionString: url, schema });
  await store.close();
  const t0 = Date.now() - 60_000;
  await withClient(url, async (db) => {
    const s = `"${schema}"`;
    await db.query(`CREATE TABLE ${s}.effects (
      id bigserial PRIMARY KEY, op_id text NOT NULL, attempt int NOT NULL, worker text NOT NULL,
      at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    await db.query(`CREATE INDEX ON ${s}.effects (op_id)`);
    await db.query(`CREATE TABLE ${s}.observing (
      op_id text NOT NULL, worker text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    await db.query(
      `INSERT INTO ${s}.operations (id, schema_version, action, target, scope, fingerprint, idempotency_key,
         run_id, actor, input, attempt, lifecycle, status, requested_at, updated_at, executed_at,
         in_flight_until, accepted_at, last_observed_at, next_poll_at, reads, provider_ref, baseline,
         completion, lease_owner, lease_token, lease_expires_at, event_seq)
       SELECT 'op-' || lpad(n::text, 7, '0'), 1, 'fleet.apply', 'item:' || n, '{}'::jsonb, 'fp-' || n,
         'key-' || n, 'seed', NULL, jsonb_build_object('n', n), 1, 'executing', NULL, $1::bigint, $1::bigint,
         $1::bigint, $1::bigint + 1, NULL, NULL, $1::bigint + 2, 0, NULL, NULL, NULL, NULL, NULL, NULL, 2
       FROM generate_series(1, $2::int) AS n`,
      [t0, count],
    );
    await db.query(
      `INSERT INTO ${s}.events (operation_id, seq, schema_version, at, type, from_lifecycle, to_lifecycle,
         status, actor, attempt, detail)
       SELECT id, e.seq, 1, $1::bigint, e.type, e.from_l, e.to_l, NULL, 'seed', e.attempt, NULL
       FROM ${s}.operations,
         (VALUES (1, 'reserved', NULL, 'requested', 0), (2, 'executing', 'requested', 'executing', 1))
           AS e(seq, type, from_l, to_l, attempt)`,
      [t0],
    );
  });
}

/** Counts operations not yet settled. */
export async function openCount(url: string, schema: string): Promise<number> {
  return withClient(url, async (db) => {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM "${schema}".operations WHERE lifecycle <> 'settled'`,
    );
    return rows[0].n as number;
  });
}

/** Polls `check` every `everyMs` until it holds; fails after `timeoutMs`, saying what was awaited. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 100,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // The server may be restarting; keep polling until the deadline.
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Waits until no operation of `schema` is left open, polling every `everyMs`. */
export function waitDrained(url: string, schema: string, timeoutMs = 40_000, everyMs = 200): Promise<void> {
  return waitFor(
    'the backlog to drain',
    async () => (await openCount(url, schema)) === 0,
    timeoutMs,
    everyMs,
  );
}

/**
 * The exactly-once check, against the truth on both sides: every operation is settled `verified`
 * with exactly one `settled` event, and the fake target logged exactly one execution of each.
 */
export async function expectExactlyOnce(url: string, schema: string, count: number): Promise<void> {
  await withClient(url, async (db) => {
    const s = `"${schema}"`;
    const one = async (text: string) => (await db.query(text)).rows[0];
    expect(
      await one(`SELECT count(*)::int AS ops,
        count(*) FILTER (WHERE lifecycle = 'settled' AND status = 'verified')::int AS verified,
        count(*) FILTER (WHERE lease_token IS NOT NULL)::int AS leased FROM ${s}.operations`),
    ).toEqual({ ops: count, verified: count, leased: 0 });
    expect(
      await one(`SELECT count(*)::int AS executions, count(DISTINCT op_id)::int AS ops FROM ${s}.effects`),
    ).toEqual({ executions: count, ops: count });
    expect(
      await one(`SELECT count(*)::int AS settled, count(DISTINCT operation_id)::int AS ops
        FROM ${s}.events WHERE type = 'settled'`),
    ).toEqual({ settled: count, ops: count });
    // The settled record names the attempt the target logged, so it was decided on that execution.
    expect(
      await one(`SELECT count(*)::int AS mismatched FROM ${s}.operations o JOIN ${s}.effects e ON e.op_id = o.id
        WHERE e.attempt <> o.attempt`),
    ).toEqual({ mismatched: 0 });
  });
}
