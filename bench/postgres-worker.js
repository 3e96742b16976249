// One drain worker of the Postgres bench, forked by bench/postgres.bench.js. It connects and warms its
// pool, says `ready`, waits for `go`, then drains the queue of its mode until a claim comes back empty and
// reports how many jobs it finished. Modes: readback (runner.reconcile; readback-unnamed and
// readback-nogroup: the same with namedStatements or groupCommit false, experiments), pgboss (fetch +
// complete) and raw-row / raw-batch (the SKIP LOCKED claim loop, settling each row or each batch in one
// UPDATE).
import PgBoss from 'pg-boss';
import { createRunner } from '../dist/index.js';
import { postgresStore } from '../dist/postgres/index.js';
import { backendPids, drainAction, observeJob, PG_URL, rawQueueSql, warmPool } from './postgres-shared.js';

const config = JSON.parse(process.argv[2]);
const { mode, schema, batch, pool: poolSize, leaseMs } = config;

const say = (message) => process.send(message);
let cpuAtGo;
const go = () =>
  new Promise((resolve) =>
    process.once('message', (message) => {
      cpuAtGo = process.cpuUsage();
      resolve(message);
    }),
  );

async function readbackWorker(namedStatements, groupCommit = true) {
  const pool = await warmPool(poolSize);
  const store = await postgresStore({ pool, schema, namedStatements, groupCommit });
  const runner = createRunner({ store, actions: [drainAction] });
  say({ ready: true, pids: pool.backendPids });
  await go();
  // once: a single pass that ends when a claim finds nothing due and unleased.
  const report = await runner.reconcile({ once: true, concurrency: batch, leaseMs });
  if (report.errors > 0) throw new Error(`reconcile errors: ${report.errors} (${report.lastError})`);
  const cleanup = async () => {
    await store.close();
    await pool.end();
  };
  return { done: report.byStatus.verified, rounds: report.rounds, cleanup };
}

async function pgBossWorker() {
  const boss = new PgBoss({
    connectionString: PG_URL,
    schema,
    max: poolSize,
    idleTimeoutMillis: 0, // passed on to pg.Pool, as in warmPool
    migrate: false,
    supervise: false,
    schedule: false,
  });
  boss.on('error', (error) => say({ error: error.message }));
  await boss.start();
  const db = boss.getDb();
  say({ ready: true, pids: await backendPids((text) => db.executeSql(text), poolSize) });
  await go();
  let done = 0;
  let rounds = 0;
  for (;;) {
    const jobs = await boss.fetch(config.queue, { batchSize: batch });
    if (jobs.length === 0) break;
    rounds++;
    // The same read as the reconciler's observe, then one complete for the batch (what boss.work does).
    const seen = await Promise.all(jobs.map((job) => observeJob(job.data.id)));
    if (seen.some((o) => o.state !== 'done')) throw new Error('a job was not done');
    const { affected } = await boss.complete(
      config.queue,
      jobs.map((job) => job.id),
    );
    if (affected !== jobs.length) throw new Error(`completed ${affected} of ${jobs.length}`);
    done += affected;
  }
  return { done, rounds, cleanup: () => boss.stop({ graceful: false, wait: true }) };
}

async function rawWorker(perRow) {
  const pool = await warmPool(poolSize);
  const sql = rawQueueSql(schema);
  say({ ready: true, pids: pool.backendPids });
  await go();
  let done = 0;
  let rounds = 0;
  const result = JSON.stringify({ status: 'verified' });
  for (;;) {
    const now = Date.now();
    const { rows } = await pool.query(sql.claim, [now, now + leaseMs, batch]);
    if (rows.length === 0) break;
    rounds++;
    const seen = await Promise.all(rows.map((row) => observeJob(row.payload.id)));
    if (seen.some((o) => o.state !== 'done')) throw new Error('a job was not done');
    if (perRow) {
      const settled = await Promise.all(rows.map((row) => pool.query(sql.settleOne, [row.id, result])));
      done += settled.reduce((n, r) => n + r.rowCount, 0);
    } else {
      const settled = await pool.query(sql.settleMany, [rows.map((row) => row.id), result]);
      done += settled.rowCount;
    }
  }
  return { done, rounds, cleanup: () => pool.end() };
}

try {
  const work = {
    readback: () => readbackWorker(true),
    'readback-unnamed': () => readbackWorker(false),
    'readback-nogroup': () => readbackWorker(true, false),
    pgboss: pgBossWorker,
    'raw-row': () => rawWorker(true),
    'raw-batch': () => rawWorker(false),
  }[mode];
  if (!work) throw new Error(`unknown mode ${mode}`);
  const { cleanup, ...outcome } = await work();
  // Reported before closing pools, so the parent's clock stops when the queue is drained.
  const cpu = process.cpuUsage(cpuAtGo);
  say({ finished: true, ...outcome, cpuMs: (cpu.user + cpu.system) / 1000 });
  // Connections stay open until the parent has read their server-side CPU time.
  await new Promise((resolve) => process.once('message', resolve));
  await cleanup();
  process.disconnect();
} catch (error) {
  say({ error: error.stack ?? String(error) });
  process.exitCode = 1;
  process.disconnect();
}
