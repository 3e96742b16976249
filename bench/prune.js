// Retention at scale: `store.prune` on a store holding BENCH_PRUNE_ROWS settled operations (three events each),
// on SQLite (FULL, a file on the disk under test) and on Postgres when a server answers. Per store: a prune with
// nothing old enough (what a scheduled sweep costs most days); a quarter of the rows deleted batch after batch (the
// deletion rate); and what a sweep costs runs writing to the same store: sequential committed actions per second
// alone and beside a sweep (`pruneSettled`, which pauses between batches; batches sent back to back; the CLI in
// another process), in rounds of four windows (medians of the per-round ratios).
// Run with `npm run bench:prune` (builds first).
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createRunner, pruneSettled } from '../dist/index.js';
import { postgresStore } from '../dist/postgres/index.js';
import { sqliteStore } from '../dist/sqlite/index.js';
import { PG_URL } from './postgres-shared.js';
import { dispose, freshPath, makeAction } from './sqlite-shared.js';

const ROWS = Number(process.env.BENCH_PRUNE_ROWS ?? 600_000);
const BATCH = 1_000;
const WINDOW_MS = Number(process.env.BENCH_PRUNE_WINDOW_MS ?? 1_500);
const ROUNDS = Number(process.env.BENCH_PRUNE_ROUNDS ?? 3);
// Seeded rows are requested and settled from this time on, a second apart: far older than any run's.
const OLD = 1_600_000_000_000;
const CLI = new URL('../dist/cli/main.js', import.meta.url).pathname;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

const OPERATION = `(id, schema_version, action, target, scope, fingerprint, idempotency_key, run_id, attempt,
  lifecycle, status, requested_at, updated_at, reads)`;

function seedSqlite(path) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  const op = db.prepare(`INSERT INTO readback_operations ${OPERATION}
    VALUES (?, 1, 'seed', ?, '{}', ?, ?, 'seed', 1, 'settled', 'verified', ?, ?, 0)`);
  const event = db.prepare(`INSERT INTO readback_events (operation_id, seq, schema_version, at, type, attempt)
    VALUES (?, ?, 1, ?, ?, 1)`);
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const id = `seed-${String(i).padStart(9, '0')}`;
      const at = OLD + i * 1_000;
      op.run(id, `row:${i}`, `fp-${i}`, `seed:${i}`, at, at + 5);
      for (const [seq, type] of [
        [1, 'reserved'],
        [2, 'executing'],
        [3, 'settled'],
      ])
        event.run(id, seq, at, type);
    }
  })();
  db.close();
}

async function seedPostgres(pool, schema) {
  await pool.query(
    `INSERT INTO "${schema}".operations ${OPERATION.replace(')', ', event_seq)')}
    SELECT 'seed-' || lpad(i::text, 9, '0'), 1, 'seed', 'row:' || i, '{}', 'fp-' || i, 'seed:' || i, 'seed', 1,
      'settled', 'verified', $2::bigint + i * 1000, $2::bigint + i * 1000 + 5, 0, 3
    FROM generate_series(0, $1::int - 1) i`,
    [ROWS, OLD],
  );
  await pool.query(
    `INSERT INTO "${schema}".events (operation_id, seq, schema_version, at, type, attempt)
    SELECT 'seed-' || lpad(i::text, 9, '0'), s, 1, $2::bigint + i * 1000, 'seeded', 1
    FROM generate_series(0, $1::int - 1) i, generate_series(1, 3) s`,
    [ROWS, OLD],
  );
  await pool.query(`ANALYZE "${schema}".operations`);
}

/**
 * A sweep beside the runs until `signal` aborts: `pruneSettled` in this process (paced), batch after batch with no
 * pause in this process, or `readback ops prune` in a child process (as a cron job would run it; killed at the end
 * of the window, which rolls back the batch it was in). Resolves to how many seeded rows it deleted.
 */
async function sweep(kind, target, signal) {
  const { store, storeSpec, seedRows } = target;
  const before = await seedRows();
  const settledBefore = OLD + ROWS * 1_000;
  if (kind === 'paced') {
    await pruneSettled(store, { settledBefore, limit: BATCH, signal });
  } else if (kind === 'back to back') {
    // A macrotask apart, as any caller's awaits would be (a loop of promises alone would never let the runs out).
    while (!signal.aborted) {
      if ((await store.prune({ settledBefore, limit: BATCH })) === 0) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
  } else {
    const child = spawn(
      process.execPath,
      [CLI, 'ops', 'prune', '--store', storeSpec, '--older-than', '30d'],
      {
        stdio: 'ignore',
      },
    );
    const ended = new Promise((resolve) => child.once('exit', resolve));
    await Promise.race([
      ended,
      new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })),
    ]);
    child.kill('SIGKILL');
    await ended;
  }
  return before - (await seedRows());
}

// Back to back last in each round: it deletes the most, and a round's other sweeps still find rows.
const KINDS = [
  ['paced', 'pruneSettled, same process'],
  ['process', '`readback ops prune`, another process'],
  ['back to back', 'prune back to back, same process'],
];

/** The measurements on an open store already holding the seeded rows; one table row per sweep kind. */
async function measure(label, target) {
  const { store } = target;
  const idle = [];
  for (let i = 0; i < 7; i++) {
    const start = performance.now();
    if ((await store.prune({ settledBefore: OLD, limit: BATCH })) !== 0) throw new Error('pruned too early');
    idle.push(performance.now() - start);
  }

  // A quarter of the rows, batch after batch, for the deletion rate; the rest are left for the sweeps below.
  const quarter = OLD + (ROWS / 4) * 1_000;
  const batches = [];
  let deleted = 0;
  const all = performance.now();
  for (;;) {
    const start = performance.now();
    const n = await store.prune({ settledBefore: quarter, limit: BATCH });
    batches.push(performance.now() - start);
    deleted += n;
    if (n < BATCH) break;
  }
  const seconds = (performance.now() - all) / 1_000;
  if (deleted !== ROWS / 4) throw new Error(`deleted ${deleted}, not ${ROWS / 4}`);

  const runner = createRunner({ store });
  // A tool that answers after a turn of the event loop, as one doing I/O would: with a Map answering in microtasks,
  // sequential runs never let a timer fire, and the paced sweep's pauses would never end inside a window.
  const action = makeAction({ yieldInExecute: true });
  let seq = 0;
  const runFor = async (ms) => {
    const until = performance.now() + ms;
    let n = 0;
    while (performance.now() < until) {
      const c = await runner.run(action, { id: `p${++seq}`, status: 'done' }, { runId: 'prune-bench' });
      if (c.status !== 'verified') throw new Error(`run came back ${c.status}`);
      n++;
    }
    return n / (ms / 1_000);
  };
  await runFor(500); // warm-up
  const kinds = KINDS.map(([kind, name]) => ({ kind, name, ratios: [], rates: [], swept: [] }));
  const alone = [];
  for (let round = 0; round < ROUNDS; round++) {
    const base = await runFor(WINDOW_MS);
    alone.push(base);
    for (const kind of kinds) {
      const controller = new AbortController();
      const sweeping = sweep(kind.kind, target, controller.signal);
      const beside = await runFor(WINDOW_MS);
      controller.abort();
      // A window in which the sweep ran out of rows would not measure a sweep: the last column shows it did not.
      kind.swept.push(await sweeping);
      kind.rates.push(beside);
      kind.ratios.push(beside / base);
    }
  }
  const f = (x) => x.toFixed(1);
  for (const kind of kinds) {
    const ratios = kind.ratios.map((r) => r.toFixed(2)).join(', ');
    console.log(
      `| ${label} | ${f(median(idle))} | ${Math.round(deleted / seconds).toLocaleString('en-US')} | ` +
        `${f(median(batches))} / ${f(pct(batches, 0.99))} | ${kind.name} | ${Math.round(median(alone))} | ` +
        `${Math.round(median(kind.rates))} | ${median(kind.ratios).toFixed(2)} (${ratios}) | ` +
        `${Math.min(...kind.swept).toLocaleString('en-US')} (${kind.swept.join(', ')}) |`,
    );
  }
}

console.log(
  `prune: ${ROWS.toLocaleString('en-US')} settled operations with 3 events each, batches of ${BATCH}`,
);
console.log(
  '| store | nothing to prune (ms, median) | rows deleted/s (a quarter, back to back) | batch p50 / p99 (ms) | sweep | runs/s alone | runs/s beside it | beside / alone (median; rounds) | rows swept per window (min) |',
);
console.log('|---|---:|---:|---:|---|---:|---:|---|---:|');

{
  const path = freshPath();
  await (await sqliteStore({ path })).close();
  seedSqlite(path);
  const store = await sqliteStore({ path });
  try {
    const db = new Database(path, { readonly: true });
    const seedRows = async () =>
      db.prepare("SELECT count(*) AS n FROM readback_operations WHERE run_id = 'seed'").get().n;
    await measure('SQLite, FULL', { store, storeSpec: path, seedRows });
    db.close();
  } finally {
    await store.close();
    dispose(path);
  }
}

const pool = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 3_000 });
try {
  await pool.query('SELECT 1');
} catch (error) {
  console.log(`(no Postgres at ${PG_URL}: ${error.message}; its row is left out)`);
  await pool.end();
  process.exit(0);
}
const schema = `bench_prune_${process.pid}`;
try {
  const store = await postgresStore({ pool, schema });
  await seedPostgres(pool, schema);
  const seedRows = async () =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".operations WHERE run_id = 'seed'`)).rows[0]
      .n;
  const storeSpec = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`;
  await measure('Postgres', { store, storeSpec, seedRows });
  await store.close();
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}
