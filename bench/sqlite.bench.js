// The SQLite store's cost per action, against the same SQL written by hand, and what group commit buys.
// Run with `npm run bench:sqlite` (builds first). The sequential loops run side by side, one action of
// each in turn, and the concurrent ones alternate, so machine noise hits them alike; we report medians
// of per-round rates and the median of per-round ratios.
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createRunner, defineAction } from '../dist/index.js';
import { sqliteStore } from '../dist/sqlite/index.js';
import { BEGIN, COMMIT, INSERT_EVENT, INSERT_OPERATION, updateOperationSql } from '../dist/sqlite/sql.js';

const SEQ_OPS_FULL = Number(process.env.BENCH_SEQ_OPS_FULL ?? 300);
const SEQ_OPS_NORMAL = Number(process.env.BENCH_SEQ_OPS_NORMAL ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const BATCHES_ON = Number(process.env.BENCH_BATCHES ?? 20);
// One commit per write is far slower; fewer batches keep its rounds to a similar wall time.
const BATCHES_OFF = Number(process.env.BENCH_BATCHES_OFF ?? 3);
// On the real disk, not tmpfs: the point is what an fsync costs. BENCH_DIR overrides.
const ROOT = process.env.BENCH_DIR ?? tmpdir();
mkdirSync(ROOT, { recursive: true });
const DIR = mkdtempSync(join(ROOT, 'readback-bench-'));
let files = 0;
const freshPath = () => join(DIR, `b-${++files}.db`);

// The target system: a Map with no I/O, so the store's writes are all that cost anything.
function makeAction() {
  const rows = new Map();
  return defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: {
      '~standard': {
        version: 1,
        vendor: 'bench',
        validate: (value) => ({ value }),
      },
    },
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: async (input) => {
      rows.set(input.id, { id: input.id, status: input.status });
      return { ok: true };
    },
    observe: async (input) => rows.get(input.id) ?? null,
    expect: (input) => ({ status: input.status }),
  });
}

async function openStore(durability, groupCommit) {
  const path = freshPath();
  return { path, store: await sqliteStore({ path }, { durability, groupCommit }) };
}

function dispose(path) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

/** Sequential: one `runner.run` per step, each a committed action that must come back verified. */
async function runnerSteps(durability, groupCommit) {
  const { path, store } = await openStore(durability, groupCommit);
  const runner = createRunner({ store });
  const action = makeAction();
  return {
    async step(i) {
      const c = await runner.run(action, { id: `r${i}`, status: 'done' }, { runId: 'bench' });
      if (c.status !== 'verified') throw new Error(`runner action ${i} came back ${c.status}`);
    },
    async close() {
      await store.close();
      dispose(path);
    },
  };
}

const OP_COLUMNS = 27;
// The runner's two UPDATEs for a committed action, as `updateOperationSql` builds them: the move to
// executing (from requested, under the attempt guard) and the settle. `checkSameStatements` proves at
// start that these, with INSERT_OPERATION and INSERT_EVENT, are exactly the writes the store issues.
const TO_EXECUTING = updateOperationSql(
  ['lifecycle', 'attempt', 'executed_at', 'in_flight_until', 'next_poll_at'],
  1,
);
const TO_SETTLED = updateOperationSql(
  ['lifecycle', 'status', 'completion', 'next_poll_at', 'last_observed_at'],
  1,
);
// As long as the completion the runner stores for one of these actions (its message, checks, evidence).
const COMPLETION = JSON.stringify({ status: 'verified', padding: 'x'.repeat(640) });
const SETTLE_DETAIL = '{"raw":{"ok":true},"errorCode":null}';

/**
 * The same record writes with better-sqlite3 by hand: the reserve INSERT + event, the executing UPDATE
 * + event, the settle UPDATE + event, each in its own BEGIN IMMEDIATE … COMMIT as the runner's
 * sequential path commits them, with the target's write and read between them. Same schema and pragmas
 * (the store creates the file), same statement texts, and values of the same shape and size as the
 * runner's (random UUID ids, SHA-256 fingerprints, a completion of the same length), so both write the
 * same pages; but no record objects, no JSON encoding or parsing, no read-backs, no checks.
 */
async function handSteps(durability) {
  const { path, store } = await openStore(durability, false);
  await store.close();
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  const begin = db.prepare(BEGIN);
  const commit = db.prepare(COMMIT);
  const insertOp = db.prepare(INSERT_OPERATION);
  const insertEvent = db.prepare(INSERT_EVENT);
  const toExecuting = db.prepare(TO_EXECUTING);
  const toSettled = db.prepare(TO_SETTLED);
  const rows = new Map();
  const tx = (body) => {
    begin.run();
    body();
    commit.run();
  };
  const step = async (i) => {
    const id = `op_${randomUUID()}`;
    const now = Date.now();
    const fingerprint = createHash('sha256').update(`set_status:r${i}`).digest('hex');
    const key = `bench:set_status:${fingerprint.slice(0, 32)}`;
    const input = `{"id":"r${i}","status":"done"}`;
    const params = Array(OP_COLUMNS).fill(null);
    params.splice(
      0,
      12,
      id,
      1,
      'set_status',
      `row:r${i}`,
      '{}',
      fingerprint,
      key,
      'bench',
      null,
      input,
      0,
      'requested',
    );
    params[13] = now;
    params[14] = now;
    params[19] = now + 35_000;
    params[20] = 0;
    if (params.length !== OP_COLUMNS) throw new Error('bad params');
    tx(() => {
      insertOp.run(params);
      insertEvent.run(id, id, 1, now, 'reserved', null, 'requested', null, null, 0, null);
    });
    tx(() => {
      // lifecycle, attempt, executed_at, in_flight_until, next_poll_at, updated_at; id, from; guards.
      toExecuting.get('executing', 1, now, null, now + 60_000, now, id, 'requested', 0, null, 1, 0);
      insertEvent.run(id, id, 1, now, 'executing', 'requested', 'executing', null, null, 1, null);
    });
    await Promise.resolve(rows.set(`r${i}`, { status: 'done' }));
    const row = await Promise.resolve(rows.get(`r${i}`));
    if (row?.status !== 'done') throw new Error(`hand action ${i} did not verify`);
    tx(() => {
      // lifecycle, status, completion, next_poll_at, last_observed_at, updated_at; id, from; guards.
      toSettled.get('settled', 'verified', COMPLETION, null, now, now, id, 'executing', 0, null, 0, null);
      insertEvent.run(id, id, 1, now, 'settled', 'executing', 'settled', 'verified', null, 1, SETTLE_DETAIL);
    });
  };
  return {
    step,
    async close() {
      db.close();
      dispose(path);
    },
  };
}

/**
 * Runs one action through the runner on a connection that records every statement executed, and
 * throws unless its writes are exactly the hand loop's: INSERT_OPERATION + INSERT_EVENT, TO_EXECUTING +
 * INSERT_EVENT, TO_SETTLED + INSERT_EVENT. (The store's other statements are reads it adds itself.)
 */
async function checkSameStatements() {
  const path = freshPath();
  const db = new Database(path);
  const executed = [];
  const recording = {
    prepare(sql) {
      const statement = db.prepare(sql);
      const note =
        (method) =>
        (...params) => {
          executed.push(sql);
          return statement[method](...params);
        };
      return { run: note('run'), get: note('get'), all: note('all') };
    },
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    get inTransaction() {
      return db.inTransaction;
    },
  };
  const store = await sqliteStore({ database: recording });
  const runner = createRunner({ store });
  const action = makeAction();
  await runner.run(action, { id: 'warm', status: 'done' }, { runId: 'bench' });
  executed.length = 0;
  const c = await runner.run(action, { id: 'probe', status: 'done' }, { runId: 'bench' });
  await store.close();
  db.close();
  dispose(path);
  const writes = executed.filter((sql) => /^\s*(INSERT|UPDATE)/.test(sql));
  const expected = [INSERT_OPERATION, INSERT_EVENT, TO_EXECUTING, INSERT_EVENT, TO_SETTLED, INSERT_EVENT];
  if (
    c.status !== 'verified' ||
    writes.length !== expected.length ||
    writes.some((w, i) => w !== expected[i])
  ) {
    throw new Error(`the hand loop no longer issues the store's statements:\n${writes.join('\n---\n')}`);
  }
  return executed.length;
}

/** `batches` times, `CONCURRENCY` runs at once (Promise.all); per-action latency is call to resolve. */
async function concurrentLoop(batches, groupCommit) {
  const { path, store } = await openStore('full', groupCommit);
  const runner = createRunner({ store });
  const action = makeAction();
  const latencies = [];
  let verified = 0;
  const start = process.hrtime.bigint();
  for (let b = 0; b < batches; b++) {
    const completions = await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, i) => {
        const t0 = process.hrtime.bigint();
        const c = await runner.run(action, { id: `r${b}-${i}`, status: 'done' }, { runId: 'bench' });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        return c;
      }),
    );
    verified += completions.filter((c) => c.status === 'verified').length;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await store.close();
  dispose(path);
  const ops = batches * CONCURRENCY;
  if (verified !== ops) throw new Error(`concurrent loop verified ${verified} of ${ops}`);
  return { rate: ops / seconds, latencies };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/**
 * One round: the three loops side by side, one action of each in turn (the order rotating every action),
 * each on its own file, so machine noise lands on all three alike; a loop's rate is its actions over the
 * time its own steps took.
 */
async function round(durability, ops) {
  const loops = [
    await runnerSteps(durability, true),
    await runnerSteps(durability, false),
    await handSteps(durability),
  ];
  const nanos = loops.map(() => 0n);
  for (let i = 0; i < ops; i++) {
    for (let k = 0; k < loops.length; k++) {
      const j = (i + k) % loops.length;
      const start = process.hrtime.bigint();
      await loops[j].step(i);
      nanos[j] += process.hrtime.bigint() - start;
    }
  }
  for (const loop of loops) await loop.close();
  const [g, s, h] = nanos.map((n) => ops / (Number(n) / 1e9));
  return { g, s, h };
}

async function perAction(durability, ops) {
  // Warm-up, not counted: BENCH_WARMUP actions per loop (default a quarter of a round).
  await round(durability, Number(process.env.BENCH_WARMUP ?? Math.ceil(ops / 4)));
  const rates = { grouped: [], single: [], hand: [] };
  const ratios = { grouped: [], single: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const { g, s, h } = await round(durability, ops);
    rates.grouped.push(g);
    rates.single.push(s);
    rates.hand.push(h);
    ratios.grouped.push(g / h);
    ratios.single.push(s / h);
  }
  return {
    durability,
    ops,
    grouped: median(rates.grouped),
    single: median(rates.single),
    hand: median(rates.hand),
    ratioGrouped: median(ratios.grouped),
    ratioSingle: median(ratios.single),
  };
}

async function groupCommit() {
  await concurrentLoop(2, true);
  await concurrentLoop(1, false);
  const onAll = { rates: [], latencies: [] };
  const off = { rates: [], latencies: [] };
  const ratios = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, as for the sequential loops.
    const first = round % 2 === 0;
    const a = first ? await concurrentLoop(BATCHES_ON, true) : undefined;
    const b = await concurrentLoop(BATCHES_OFF, false);
    const on = a ?? (await concurrentLoop(BATCHES_ON, true));
    onAll.rates.push(on.rate);
    onAll.latencies.push(...on.latencies);
    off.rates.push(b.rate);
    off.latencies.push(...b.latencies);
    ratios.push(on.rate / b.rate);
  }
  return { on: onAll, off, ratio: median(ratios) };
}

const fs = execFileSync('df', ['-T', DIR], { encoding: 'utf8' }).trim().split('\n').at(-1).split(/\s+/);
try {
  const statements = await checkSameStatements();
  const full = await perAction('full', SEQ_OPS_FULL);
  const normal = await perAction('normal', SEQ_OPS_NORMAL);
  const gc = await groupCommit();

  console.log(
    `readback on SQLite — node ${process.version}, ${ROUNDS} rounds, files in ${DIR} (${fs[0]}, ${fs[1]})`,
  );
  console.log('');
  console.log(
    `Per-action cost, sequential (one action at a time, the three loops side by side). The hand loop issues the store's 6 writes`,
  );
  console.log(
    `(checked on a recorded run); the store runs ${statements} statements per action in all, with its reads and BEGIN/COMMIT.`,
  );
  console.log('');
  console.log(
    '| durability | actions/round | runner, groupCommit on (default) | runner, groupCommit off | hand-written SQL | on / hand | off / hand |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of [full, normal]) {
    console.log(
      `| ${r.durability.toUpperCase()} | ${r.ops} | ${Math.round(r.grouped)} | ${Math.round(r.single)} | ${Math.round(r.hand)} | ${r.ratioGrouped.toFixed(2)} | ${r.ratioSingle.toFixed(2)} |`,
    );
  }
  console.log('');
  console.log(`Group commit, ${CONCURRENCY} concurrent actions (Promise.all), FULL`);
  console.log('');
  console.log('| mode | batches/round | durable actions/s (median) | latency p50 ms | latency p99 ms |');
  console.log('|---|---:|---:|---:|---:|');
  const row = (label, batches, m) =>
    console.log(
      `| ${label} | ${batches} × ${CONCURRENCY} | ${Math.round(median(m.rates))} | ${percentile(m.latencies, 50).toFixed(1)} | ${percentile(m.latencies, 99).toFixed(1)} |`,
    );
  row('groupCommit on', BATCHES_ON, gc.on);
  row('groupCommit off (one commit per write)', BATCHES_OFF, gc.off);
  console.log('');
  console.log(`on / off (median of per-round ratios): ${gc.ratio.toFixed(1)}×`);
} finally {
  rmSync(DIR, { recursive: true, force: true });
}
