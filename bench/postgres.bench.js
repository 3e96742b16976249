// readback on Postgres: the per-action cost against the same statements issued by hand with pg, and the
// drain rate of 4 reconciler processes against pg-boss and the raw SKIP LOCKED claim loop, same server,
// same run. Run with `npm run bench:postgres` (builds first). Rounds alternate between the loops compared
// so machine noise hits them alike; we report per-round rates and ratios, their medians, and the median
// of per-round ratios. Every loop checks that every action or job was finished (it throws otherwise).
import { createHash, randomUUID } from 'node:crypto';
import { createRunner, newOperationId, RECORD_SCHEMA_VERSION } from '../dist/index.js';
import { postgresStore } from '../dist/postgres/index.js';
import { statementsFor, tablesIn, transitionSql } from '../dist/postgres/sql.js';
import { drainRound } from './postgres-drain.js';
import { committedAction, PG_URL, preparingPool, requireServer, warmPool } from './postgres-shared.js';

const env = (name, fallback) => Number(process.env[name] ?? fallback);
const SEQ_OPS = env('BENCH_PG_SEQ_OPS', 500);
const CONCURRENCY = env('BENCH_CONCURRENCY', 64);
const BATCHES = env('BENCH_PG_BATCHES', 30);
const ROUNDS = env('BENCH_ROUNDS', 3);
const POOL = env('BENCH_PG_POOL', 10);
// Sequential actions of each loop timed first, on a fresh process: the cold figure.
const COLD = env('BENCH_PG_COLD', 500);
// Then sequential actions of each loop not counted (JIT warm-up), before the per-action rounds.
const WARMUP = env('BENCH_PG_WARMUP', 3000);
// Batches each loop runs in a row before the other takes over (1: they alternate batch by batch).
const BLOCK = env('BENCH_PG_BLOCK', 1);
const DRAIN = {
  ops: env('BENCH_PG_DRAIN_OPS', 20_000),
  workers: env('BENCH_PG_WORKERS', 4),
  // The reconciler's `concurrency` (operations claimed per claim and driven at once) = pg-boss batchSize
  // = the raw loop's LIMIT.
  batch: env('BENCH_PG_BATCH', 32),
  pool: POOL,
  leaseMs: env('BENCH_PG_LEASE_MS', 30_000),
  seedWidth: CONCURRENCY,
};
const ONLY = process.env.BENCH_PG_ONLY; // 'action' or 'drain' to run one half

let schemas = 0;
const freshSchema = (kind) => `bench_pg_${kind}_${process.pid}_${++schemas}`;

/** A pool that counts its queries, so the report can say how many round trips an action costs. */
function counted(pool) {
  const wrapper = {
    queries: 0,
    totalCount: 0, // a number here marks it as a pool (queries may run in parallel), as pg.Pool does
    query(text, values) {
      wrapper.queries++;
      return pool.query(text, values);
    },
  };
  return wrapper;
}

/**
 * `runner.run` of a committed action on a Map target. A system runs one batch at a time (`batch(names)`,
 * all at once), so the per-action loops can interleave batch by batch; `finish()` checks the database.
 */
async function runnerSystem(pool) {
  const schema = freshSchema('runner');
  const db = counted(pool);
  const store = await postgresStore({ pool: db, schema });
  const runner = createRunner({ store });
  const action = committedAction();
  let verified = 0;
  let actions = 0;
  db.queries = 0;
  return {
    async batch(names) {
      const done = await Promise.all(
        names.map((name) => runner.run(action, { id: name, status: 'done' }, { runId: 'bench' })),
      );
      verified += done.filter((c) => c.status === 'verified').length;
      actions += names.length;
    },
    /** Statements sent and actions run so far. */
    counts: () => ({ queries: db.queries, actions }),
    async finish() {
      await store.close();
      await checkAndDrop(pool, schema, actions, verified, 'runner');
    },
  };
}

// A completion of the shape and size the runner stores for this action (taken from a real run).
let completionTemplate;

/**
 * The same two writes by hand: the reserve INSERT that creates the row already moved to executing, with its
 * 'reserved' and 'executing' events (as the runner's reserve does when nothing runs between reserving and
 * executing), then the settle + event, each one statement (the store's own texts from dist/postgres/sql.js), with
 * values of the runner's shape (time-ordered ids from `newOperationId`, SHA-256 fingerprints, its completion and event
 * detail, a fresh write id per write), and the target's write and read in between. No validation, records, JSON
 * parsing or checks.
 */
async function handSystem(pool) {
  const schema = freshSchema('hand');
  await (await postgresStore({ pool, schema })).close();
  const t = tablesIn(schema);
  const reserve = statementsFor(t).reserve;
  const toSettled = transitionSql(
    t,
    ['lifecycle', 'status', 'completion', 'next_poll_at', 'last_observed_at'],
    {
      leaseToken: false,
      attempt: false,
    },
  );
  const rows = new Map();
  const named = preparingPool(pool);
  const detail = JSON.stringify({ raw: { ok: true }, errorCode: null });
  // A statement that takes more or fewer parameters than given has changed shape: fail rather than measure it.
  const arity = new Map([reserve, toSettled].map((text) => [text, placeholders(text)]));
  const run = (text, values) => {
    if (arity.get(text) !== values.length)
      throw new Error(`statement takes ${arity.get(text)} parameters, not ${values.length}`);
    // Named like the store's own statements (namedStatements defaults to true): the same statements.
    return named.query(text, values);
  };
  const one = async (name) => {
    const id = newOperationId();
    const now = Date.now();
    const input = { id: name, status: 'done' };
    const fingerprint = createHash('sha256')
      .update(`set_status:${JSON.stringify(input)}`)
      .digest('hex');
    const key = `bench:set_status:${fingerprint.slice(0, 32)}`;
    // recordParams order (sqlite/rows.ts): a new record already moved to executing (attempt 1), due for a read-back
    // if its run dies mid-execute.
    const record = [id, RECORD_SCHEMA_VERSION, 'set_status', `row:${name}`, '{}', fingerprint, key, 'bench'];
    record.push(null, JSON.stringify(input), 1, 'executing', null, now, now, now, null, null, null);
    record.push(now + 60_000, 0, null, null, null, null, null, null);
    const reserved = await run(reserve, [
      ...record,
      ...[RECORD_SCHEMA_VERSION, now, 'reserved', null, null, 0, null, randomUUID()],
      ...[now, 'executing', null, null, 1, null],
    ]);
    if (reserved.rowCount !== 1) return false;
    rows.set(name, { id: name, status: 'done' });
    if ((await rows.get(name))?.status !== 'done') return false;
    const completion = JSON.stringify({ ...completionTemplate, operationId: id, idempotencyKey: key });
    const settled = await run(toSettled, [
      ...[id, ['executing'], now, 'settled', 'verified', completion, null, now],
      ...[RECORD_SCHEMA_VERSION, now, 'settled', 'verified', null, 1, detail, randomUUID()],
    ]);
    return settled.rowCount === 1;
  };
  let verified = 0;
  let actions = 0;
  return {
    async batch(names) {
      const done = await Promise.all(names.map(one));
      verified += done.filter(Boolean).length;
      actions += names.length;
    },
    async finish() {
      await checkAndDrop(pool, schema, actions, verified, 'hand');
      return {};
    },
  };
}

/**
 * Runs `batches` batches of `width` actions through the runner and by hand, taking turns of BLOCK batches
 * (default 1: batch by batch; which goes first alternates), timing each system's own batches only: a slow spell
 * of the machine or the disk then hits both alike, where back-to-back loops let it land on one. The two systems
 * live for the whole per-action run, as one runner and one store live for a service's whole life.
 */
async function sideBySide(loops, batches, width, round) {
  const timed = loops.map((loop) => ({ ...loop, ns: 0n }));
  for (let b0 = 0; b0 < batches; b0 += BLOCK) {
    const order = (b0 / BLOCK + round) % 2 === 0 ? timed : [timed[1], timed[0]];
    for (const s of order) {
      for (let b = b0; b < Math.min(batches, b0 + BLOCK); b++) {
        const names = Array.from({ length: width }, () => `${s.name}-${++actionSeq}`);
        const start = process.hrtime.bigint();
        await s.system.batch(names);
        s.ns += process.hrtime.bigint() - start;
      }
    }
  }
  const [runner, hand] = timed;
  const rate = (ns) => (batches * width) / (Number(ns) / 1e9);
  return { runner: rate(runner.ns), hand: rate(hand.ns) };
}
let actionSeq = 0;

/** The highest $n placeholder in a statement: how many parameters it takes. */
function placeholders(text) {
  return Math.max(0, ...Array.from(text.matchAll(/\$(\d+)/g), (m) => Number(m[1])));
}

// Both loops must have settled every action verified, with three events each, in the database.
async function checkAndDrop(pool, schema, ops, verified, label) {
  try {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*)::int FROM "${schema}".operations WHERE lifecycle = 'settled' AND status = 'verified') AS settled,
              (SELECT count(*)::int FROM "${schema}".events) AS events`,
    );
    const { settled, events } = rows[0];
    if (verified !== ops || settled !== ops || events !== 3 * ops) {
      throw new Error(
        `${label} loop: ${verified} verified, ${settled} settled, ${events} events, of ${ops} actions`,
      );
    }
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x) => Math.round(x).toLocaleString('en-US').replaceAll(',', ' ');
const list = (xs, digits = 2) => xs.map((x) => x.toFixed(digits)).join(', ');

async function perAction() {
  const pool = await warmPool(POOL);
  try {
    // A real completion for the hand loop to copy the shape of.
    const schema = freshSchema('template');
    const store = await postgresStore({ pool, schema });
    completionTemplate = await createRunner({ store }).run(
      committedAction(),
      { id: 'template', status: 'done' },
      { runId: 'bench' },
    );
    await store.close();
    await pool.query(`DROP SCHEMA "${schema}" CASCADE`);

    const loops = [
      { name: 'runner', system: await runnerSystem(pool) },
      { name: 'hand', system: await handSystem(pool) },
    ];
    // Cold: the first actions of a fresh process, while V8 is still compiling both loops' code.
    const cold = await sideBySide(loops, COLD, 1, 0);
    // Warm-up, not counted: the runner's functions run once per action, so V8 only optimizes the last of
    // them a few thousand actions in (see "Warm-up" in docs/benchmarks-history.md).
    await sideBySide(loops, WARMUP, 1, 1);

    const shapes = [
      { label: 'sequential (one at a time)', batches: SEQ_OPS, width: 1 },
      { label: `${CONCURRENCY} at once (Promise.all)`, batches: BATCHES, width: CONCURRENCY },
    ];
    const results = [];
    for (const shape of shapes) {
      const r = { ...shape, runner: [], hand: [], ratios: [] };
      const before = loops[0].system.counts();
      for (let round = 0; round < ROUNDS; round++) {
        const m = await sideBySide(loops, shape.batches, shape.width, round);
        r.runner.push(m.runner);
        r.hand.push(m.hand);
        r.ratios.push(m.runner / m.hand);
      }
      const after = loops[0].system.counts();
      r.queries = (after.queries - before.queries) / (after.actions - before.actions);
      results.push(r);
    }
    await loops[0].system.finish();
    await loops[1].system.finish();
    return { cold, results };
  } finally {
    await pool.end();
  }
}

async function drain() {
  const modes = ['readback', 'pgboss', 'raw-row', 'raw-batch'];
  // BENCH_PG_EXPERIMENTS=unnamed,nogroup (either or both) adds readback with namedStatements: false, or
  // with groupCommit: false, to show what naming the statements and batching the transitions buy.
  const experiments = (process.env.BENCH_PG_EXPERIMENTS ?? '').split(',');
  if (experiments.includes('nogroup')) modes.splice(1, 0, 'readback-nogroup');
  if (experiments.includes('unnamed')) modes.splice(1, 0, 'readback-unnamed');
  const r = Object.fromEntries(modes.map((m) => [m, { rates: [], seeds: [], cpu: [], server: [], wal: [] }]));
  const ratios = Object.fromEntries(modes.filter((m) => m !== 'readback').map((m) => [m, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round so no system always runs first (or last) on a cooling machine.
    const order = modes.map((_, i) => modes[(i + round) % modes.length]);
    const rates = {};
    for (const mode of order) {
      const d = await drainRound(mode, DRAIN);
      rates[mode] = d.rate;
      r[mode].rates.push(d.rate);
      r[mode].seeds.push(d.seedRate);
      r[mode].cpu.push(d.workerCpuUsPerJob);
      r[mode].server.push(d.serverCpuUsPerJob);
      r[mode].wal.push(d.walBytesPerJob);
    }
    for (const other of Object.keys(ratios)) ratios[other].push(rates.readback / rates[other]);
  }
  return { r, ratios };
}

try {
  await requireServer();
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
console.log(
  `readback on Postgres — node ${process.version}, ${PG_URL.replace(/\/\/[^@]*@/, '//')}, ${ROUNDS} rounds, pools of ${POOL}`,
);
if (ONLY !== 'drain') {
  const { cold, results } = await perAction();
  console.log('');
  console.log('Per-action cost: committed action on a Map target, runner.run vs the same statements by hand');
  console.log('');
  console.log(
    `Cold (the first ${COLD} sequential actions of each loop in a fresh process): runner ${fmt(cold.runner)} actions/s, hand ${fmt(cold.hand)}, runner / hand ${(cold.runner / cold.hand).toFixed(2)}`,
  );
  console.log(`Warm (after ${WARMUP} more sequential actions of each loop, not counted):`);
  console.log('');
  console.log(
    '| shape | actions/round | runner actions/s | hand actions/s | runner / hand (median of rounds) | per-round ratios | queries per action (runner) |',
  );
  console.log('|---|---:|---:|---:|---:|---|---:|');
  for (const x of results) {
    console.log(
      `| ${x.label} | ${x.batches * x.width} | ${fmt(median(x.runner))} | ${fmt(median(x.hand))} | ${median(x.ratios).toFixed(2)} | ${list(x.ratios)} | ${x.queries.toFixed(2)} |`,
    );
  }
}
if (ONLY !== 'action') {
  const { r, ratios } = await drain();
  console.log('');
  console.log(
    `Drain: ${DRAIN.ops} due jobs, ${DRAIN.workers} worker processes, batch ${DRAIN.batch}, pool ${DRAIN.pool} per process, leaseMs ${DRAIN.leaseMs}`,
  );
  console.log('');
  console.log(
    '| system | drain jobs/s (median) | per-round jobs/s | readback / this (median of rounds) | per-round ratios | seeding jobs/s |',
  );
  console.log('|---|---:|---|---:|---|---:|');
  const labels = {
    readback: 'readback runner.reconcile (claim → observe → settle)',
    'readback-unnamed': 'readback with namedStatements: false (experiment)',
    'readback-nogroup': 'readback with groupCommit: false (experiment)',
    pgboss: 'pg-boss 10 fetch + complete(batch)',
    'raw-row': 'raw SKIP LOCKED claim, settle UPDATE per row',
    'raw-batch': 'raw SKIP LOCKED claim, one settle UPDATE per batch',
  };
  for (const [mode, x] of Object.entries(r)) {
    const ratio = ratios[mode];
    console.log(
      `| ${labels[mode]} | ${fmt(median(x.rates))} | ${x.rates.map(fmt).join(', ')} | ${ratio ? median(ratio).toFixed(2) : '—'} | ${ratio ? list(ratio) : '—'} | ${fmt(median(x.seeds))} |`,
    );
  }
  console.log('');
  console.log('Cost per drained job (medians of rounds; WAL is server-wide, so other sessions add to it)');
  console.log('');
  console.log("| system | worker CPU µs/job | server CPU µs/job (workers' backends) | WAL bytes/job |");
  console.log('|---|---:|---:|---:|');
  for (const [mode, x] of Object.entries(r)) {
    console.log(
      `| ${labels[mode]} | ${fmt(median(x.cpu))} | ${fmt(median(x.server))} | ${fmt(median(x.wal))} |`,
    );
  }
}
