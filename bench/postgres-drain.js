// The drain half of the Postgres bench: seed N due jobs for one system, fork the worker processes, time
// them from `go` until the last one finds the queue empty, then check in the database that every job was
// finished exactly once. Used by bench/postgres.bench.js.
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import PgBoss from 'pg-boss';
import { createRunner } from '../dist/index.js';
import { postgresStore } from '../dist/postgres/index.js';
import { drainAction, PG_URL, rawQueueSql, warmPool } from './postgres-shared.js';

const WORKER = fileURLToPath(new URL('./postgres-worker.js', import.meta.url));
const QUEUE = 'drain';
// BENCH_PG_PROFILE=<folder>: each worker writes a V8 CPU profile there (node --cpu-prof).
const PROFILE = process.env.BENCH_PG_PROFILE
  ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PG_PROFILE]
  : [];
let schemas = 0;
const freshSchema = (mode) => `bench_drain_${mode.replace('-', '_')}_${process.pid}_${++schemas}`;

/** Runs `count` calls of `task(i)` with at most `width` in flight. */
export async function inParallel(count, width, task) {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane));
}

const seconds = (start) => Number(process.hrtime.bigint() - start) / 1e9;

// Seeding: each system's own way in, at SEED_WIDTH calls in flight (bulk SQL for the raw queue).
async function seedReadback(admin, schema, n, width, poolSize) {
  // Its own pool, ended before the workers start, so the drain has the server's connections to itself.
  const pool = await warmPool(poolSize);
  const store = await postgresStore({ pool, schema });
  const runner = createRunner({ store, actions: [drainAction] });
  let pending = 0;
  const start = process.hrtime.bigint();
  await inParallel(n, width, async (i) => {
    const c = await runner.run(drainAction, { id: `j${i}` }, { runId: 'drain', wait: false });
    if (c.status === 'pending') pending++;
  });
  const rate = n / seconds(start);
  await store.close();
  await pool.end();
  if (pending !== n) throw new Error(`seeding: ${pending} of ${n} readback operations pending`);
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM "${schema}".operations WHERE lifecycle = 'accepted' AND next_poll_at <= $1`,
    [Date.now()],
  );
  if (rows[0].n !== n) throw new Error(`seeding: ${rows[0].n} of ${n} readback operations due`);
  return rate;
}

async function seedPgBoss(schema, n, width, poolSize) {
  const boss = new PgBoss({
    connectionString: PG_URL,
    schema,
    max: poolSize,
    supervise: false,
    schedule: false,
  });
  boss.on('error', () => undefined);
  await boss.start();
  await boss.createQueue(QUEUE);
  const start = process.hrtime.bigint();
  await inParallel(n, width, async (i) => {
    const id = await boss.send(QUEUE, { id: `j${i}` });
    if (!id) throw new Error('pg-boss send returned no id');
  });
  const rate = n / seconds(start);
  await boss.stop({ graceful: false, wait: true });
  return rate;
}

async function seedRaw(admin, schema, n) {
  const sql = rawQueueSql(schema);
  for (const statement of sql.create) await admin.query(statement);
  const start = process.hrtime.bigint();
  await admin.query(sql.seed, [n, Date.now()]);
  return n / seconds(start);
}

async function finishedCount(admin, mode, schema) {
  const text = {
    readback: `SELECT count(*)::int AS n FROM "${schema}".operations WHERE lifecycle = 'settled' AND status = 'verified'`,
    pgboss: `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = '${QUEUE}' AND state = 'completed'`,
    raw: rawQueueSql(schema).countDone,
  }[mode.startsWith('raw') ? 'raw' : mode.startsWith('readback') ? 'readback' : mode];
  return (await admin.query(text)).rows[0].n;
}

// What the server wrote to its WAL, how often it flushed it, and how many transactions committed.
async function walStats(admin) {
  const { rows } = await admin.query(`SELECT w.wal_bytes::float8 AS bytes, w.wal_sync::float8 AS syncs,
      (SELECT sum(xact_commit)::float8 FROM pg_stat_database) AS xacts,
      pg_current_wal_lsn()::text AS lsn FROM pg_stat_wal w`);
  return rows[0];
}

// CPU time (user + system, ms) the server processes behind the workers' connections have used so far.
function serverCpuMs(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      return Number.NaN; // not on this machine (a remote server) or not readable
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

/** Forks the workers, waits until all are ready, starts them together and resolves when all finished. */
function runWorkers(settings, mode, schema) {
  const config = {
    mode,
    schema,
    queue: QUEUE,
    batch: settings.batch,
    pool: settings.pool,
    leaseMs: settings.leaseMs,
  };
  const children = Array.from({ length: settings.workers }, () =>
    fork(WORKER, [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: PROFILE,
    }),
  );
  return new Promise((resolve, reject) => {
    let ready = 0;
    let start;
    let cpuAtStart;
    const pids = [];
    const results = [];
    const exits = children.map((child) => new Promise((done) => child.once('exit', done)));
    const fail = (error) => {
      for (const child of children) child.kill();
      reject(error);
    };
    for (const child of children) {
      child.on('message', (message) => {
        if (message.error) return fail(new Error(`${mode} worker: ${message.error}`));
        if (message.ready) pids.push(...message.pids);
        if (message.ready && ++ready === children.length) {
          cpuAtStart = serverCpuMs(pids);
          start = process.hrtime.bigint();
          for (const c of children) c.send('go');
        }
        if (message.finished) {
          results.push(message);
          if (results.length === children.length) {
            const elapsed = seconds(start);
            const serverCpu = serverCpuMs(pids) - cpuAtStart;
            for (const c of children) c.send('close');
            Promise.all(exits).then(() => resolve({ elapsed, results, serverCpu }), fail);
          }
        }
      });
      child.once('exit', (code) => {
        if (code !== 0 && results.length < children.length) fail(new Error(`${mode} worker exited ${code}`));
      });
    }
  });
}

/**
 * One drain of `settings.ops` jobs by `mode` (readback, pgboss, raw-row, raw-batch) in a fresh schema,
 * dropped afterwards. Throws unless every job was finished exactly once.
 */
export async function drainRound(mode, settings) {
  const schema = freshSchema(mode);
  const admin = await warmPool(2);
  try {
    const n = settings.ops;
    let seedRate;
    if (mode.startsWith('readback'))
      seedRate = await seedReadback(admin, schema, n, settings.seedWidth, settings.pool);
    else if (mode === 'pgboss') seedRate = await seedPgBoss(schema, n, settings.seedWidth, settings.pool);
    else seedRate = await seedRaw(admin, schema, n);
    const before = await walStats(admin);
    const { elapsed, results, serverCpu } = await runWorkers(settings, mode, schema);
    const after = await walStats(admin);
    const reported = results.reduce((sum, r) => sum + r.done, 0);
    const inDb = await finishedCount(admin, mode, schema);
    if (reported !== n || inDb !== n) {
      throw new Error(`${mode}: workers finished ${reported}, database shows ${inDb}, of ${n} jobs`);
    }
    return {
      seedRate,
      rate: n / elapsed,
      elapsed,
      rounds: results.map((r) => r.rounds),
      // CPU the worker processes spent (user + system) per job, from go to drained.
      workerCpuUsPerJob: (results.reduce((sum, r) => sum + r.cpuMs, 0) * 1000) / n,
      // CPU the workers' Postgres backends spent per job (NaN when /proc cannot see the server).
      serverCpuUsPerJob: (serverCpu * 1000) / n,
      // Server-wide, so other sessions on the server add to it; a rough per-job figure, not an exact one.
      walBytesPerJob: (after.bytes - before.bytes) / n,
      walSyncsPerJob: (after.syncs - before.syncs) / n,
      transactionsPerJob: (after.xacts - before.xacts) / n,
      walRange: [before.lsn, after.lsn],
    };
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}
