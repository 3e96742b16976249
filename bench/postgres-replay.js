// Diagnostic for the drain: what one drained job costs on ONE connection with synchronous_commit off (no
// fsync wait, no worker processes competing for the CPU), in wall time and in this process's CPU, for
// runner.reconcile with and without group commit, for its per-job statements replayed by hand, and for the
// raw SKIP LOCKED loop. Run with `npm run build && node bench/postgres-replay.js`; sizes:
// BENCH_PG_REPLAY_OPS=3000 BENCH_ROUNDS=2 BENCH_PG_BATCH=32.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { createRunner, RECORD_SCHEMA_VERSION } from '../dist/index.js';
import { postgresStore } from '../dist/postgres/index.js';
import { statementsFor, tablesIn, transitionSql } from '../dist/postgres/sql.js';
import { inParallel } from './postgres-drain.js';
import { drainAction, PG_URL, rawQueueSql, requireServer, warmPool } from './postgres-shared.js';

const OPS = Number(process.env.BENCH_PG_REPLAY_OPS ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BATCH = Number(process.env.BENCH_PG_BATCH ?? 32);
const LEASE_MS = 30_000;

try {
  await requireServer();
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
const admin = await warmPool(10);
const client = new pg.Client({ connectionString: PG_URL });
await client.connect();
await client.query('SET synchronous_commit = off');
const nameOf = (text) => `rp_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
const send = (prepared) => (text, values) =>
  client.query(prepared ? { name: nameOf(text), text, values } : { text, values });
// Wall time and this process's CPU time since `mark()`, in µs (the timed part only, not the seeding).
const mark = () => ({ wall: process.hrtime.bigint(), cpu: process.cpuUsage() });
const since = (m) => {
  const cpu = process.cpuUsage(m.cpu);
  return { wallUs: Number(process.hrtime.bigint() - m.wall) / 1e3, cpuUs: cpu.user + cpu.system };
};
const takes = (text) => Math.max(0, ...Array.from(text.matchAll(/\$(\d+)/g), (m) => Number(m[1])));
// Appends a write id when the statement takes one more parameter than given, as the store does.
const withWriteId = (text, values) =>
  takes(text) === values.length + 1 ? [...values, `w_${Math.random()}`] : values;

async function seedOperations(schema) {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  const store = await postgresStore({ pool: admin, schema });
  const runner = createRunner({ store, actions: [drainAction] });
  await inParallel(OPS, 64, (i) => runner.run(drainAction, { id: `j${i}` }, { runId: 'drain', wait: false }));
  await admin.query(`VACUUM ANALYZE "${schema}".operations`);
}

/** The real reconciler, on the one connection (the store queues its statements). */
async function reconciler({ groupCommit }) {
  const schema = 'bench_replay_runner';
  await seedOperations(schema);
  const store = await postgresStore({ pool: client, schema, groupCommit });
  const runner = createRunner({ store, actions: [drainAction] });
  const start = mark();
  const report = await runner.reconcile({ once: true, concurrency: BATCH, leaseMs: LEASE_MS });
  const elapsed = since(start);
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  if (report.byStatus.verified !== OPS) throw new Error(`reconciler verified ${report.byStatus.verified}`);
  return elapsed;
}

/**
 * The reconciler's statements by hand: claimDue, then per job the `observed` and the `settled`
 * transitions (or, `merged`, one transition doing both), texts from dist/postgres/sql.js.
 */
async function replay({ merged, prepared }) {
  const schema = 'bench_replay_hand';
  await seedOperations(schema);
  const t = tablesIn(schema);
  const q = send(prepared);
  const claim = statementsFor(t).claimDue;
  const guard = { leaseToken: true, attempt: false };
  const observed = transitionSql(t, ['lifecycle', 'reads', 'last_observed_at'], guard);
  const settleColumns = ['lifecycle', 'status', 'completion', 'next_poll_at', 'last_observed_at'];
  const leaseColumns = ['lease_owner', 'lease_token', 'lease_expires_at'];
  const settle = transitionSql(t, [...settleColumns, ...(merged ? ['reads'] : []), ...leaseColumns], guard);
  const completion = JSON.stringify({ status: 'verified', padding: 'x'.repeat(600) });
  let done = 0;
  const start = mark();
  for (;;) {
    const now = Date.now();
    const claimArgs = [now, BATCH, 'replay', LEASE_MS, RECORD_SCHEMA_VERSION, null];
    const { rows } = await q(claim, claimArgs.slice(0, takes(claim)));
    if (rows.length === 0) break;
    for (const row of rows) {
      const event = (type, status, detail) => [RECORD_SCHEMA_VERSION, now, type, status, 'replay', 1, detail];
      if (!merged) {
        const values = [row.id, ['accepted'], now, 'accepted', 1, now, row.lease_token];
        const o = await q(
          observed,
          withWriteId(observed, [...values, ...event('observed', 'pending', '{}')]),
        );
        if (o.rowCount !== 1) throw new Error('observed transition did not apply');
      }
      const values = [row.id, ['accepted'], now, 'settled', 'verified', completion, null, now];
      if (merged) values.push(1);
      values.push(null, null, null, row.lease_token, ...event('settled', 'verified', '{"errorCode":null}'));
      const s = await q(settle, withWriteId(settle, values));
      if (s.rowCount !== 1) throw new Error('settle transition did not apply');
      done++;
    }
  }
  const elapsed = since(start);
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  if (done !== OPS) throw new Error(`replay settled ${done} of ${OPS}`);
  return elapsed;
}

/** A fresh raw queue of OPS due jobs, vacuumed and analysed, for the raw loops. */
async function freshRawQueue() {
  const schema = 'bench_replay_raw';
  const sql = rawQueueSql(schema);
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  for (const statement of sql.create) await admin.query(statement);
  await admin.query(sql.seed, [OPS, Date.now()]);
  await admin.query(`VACUUM ANALYZE "${schema}".jobs`);
  return { schema, sql };
}

/** The raw SKIP LOCKED loop: claim a batch, settle each row with one UPDATE. */
async function raw({ prepared }) {
  const { schema, sql } = await freshRawQueue();
  const q = send(prepared);
  let done = 0;
  const start = mark();
  for (;;) {
    const now = Date.now();
    const { rows } = await q(sql.claim, [now, now + LEASE_MS, BATCH]);
    if (rows.length === 0) break;
    for (const row of rows) done += (await q(sql.settleOne, [row.id, '{"status":"verified"}'])).rowCount;
  }
  const elapsed = since(start);
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  if (done !== OPS) throw new Error(`raw loop settled ${done} of ${OPS}`);
  return elapsed;
}

/** The raw loop settling each claimed batch with one UPDATE (the floor). */
async function rawBatch() {
  const { schema, sql } = await freshRawQueue();
  const q = send(true);
  let done = 0;
  const start = mark();
  for (;;) {
    const now = Date.now();
    const { rows } = await q(sql.claim, [now, now + LEASE_MS, BATCH]);
    if (rows.length === 0) break;
    done += (await q(sql.settleMany, [rows.map((row) => row.id), '{"status":"verified"}'])).rowCount;
  }
  const elapsed = since(start);
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  if (done !== OPS) throw new Error(`raw loop settled ${done} of ${OPS}`);
  return elapsed;
}

const cases = {
  'runner.reconcile (group commit, the default)': () => reconciler({ groupCommit: true }),
  'runner.reconcile, groupCommit: false': () => reconciler({ groupCommit: false }),
  'its statements by hand, one settle per job, prepared': () => replay({ merged: true, prepared: true }),
  'raw claim + settle UPDATE per row, prepared': () => raw({ prepared: true }),
  'raw claim + one settle UPDATE per batch, prepared': rawBatch,
};
const results = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, run] of Object.entries(cases)) {
      const { wallUs, cpuUs } = await run();
      results[label].push({ wall: wallUs / OPS, cpu: cpuUs / OPS });
    }
  }
} finally {
  await client.end();
  await admin.end();
}
console.log(`One connection, synchronous_commit off, ${OPS} jobs, batch ${BATCH}, ${ROUNDS} rounds`);
console.log('');
console.log('| loop | wall µs per job, per round | this process CPU µs per job, per round |');
console.log('|---|---|---|');
for (const [label, xs] of Object.entries(results)) {
  const fmt = (key) => xs.map((x) => x[key].toFixed(0)).join(', ');
  console.log(`| ${label} | ${fmt('wall')} | ${fmt('cpu')} |`);
}
