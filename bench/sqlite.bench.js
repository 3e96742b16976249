// The SQLite store's cost per action, against the same SQL written by hand, and what group commit buys.
// Run with `npm run bench:sqlite` (builds first). The sequential loops run side by side, one action of
// each in turn, and the concurrent ones alternate, so machine noise hits them alike; we report medians
// of per-round rates and the median of per-round ratios.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { createRunner } from '../dist/index.js';
import { sqliteStore } from '../dist/sqlite/index.js';
import { BEGIN, COMMIT, INSERT_EVENT, INSERT_OPERATION } from '../dist/sqlite/sql.js';
import {
  COMPLETION,
  DIR,
  dispose,
  freshPath,
  fsyncLatency,
  handSteps,
  makeAction,
  openStore,
  runnerSteps,
  TO_SETTLED,
} from './sqlite-shared.js';

const SEQ_OPS_FULL = Number(process.env.BENCH_SEQ_OPS_FULL ?? 300);
const SEQ_OPS_NORMAL = Number(process.env.BENCH_SEQ_OPS_NORMAL ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const BATCHES_ON = Number(process.env.BENCH_BATCHES ?? 20);
// Sequential actions of each per-action loop timed first (cold), then run uncounted (warm-up), per durability.
const COLD = Number(process.env.BENCH_COLD ?? 300);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3_000);
// One commit per write is far slower; fewer batches keep its rounds to a similar wall time.
const BATCHES_OFF = Number(process.env.BENCH_BATCHES_OFF ?? 3);
// Concurrent batches each mode runs uncounted before its rounds (~3 000 actions at 64).
const GC_WARMUP = Number(process.env.BENCH_GC_WARMUP ?? 50);

/**
 * Runs one action through the runner on a connection that records every statement executed, and
 * throws unless its writes and commits are exactly the hand loop's: BEGIN, INSERT_OPERATION + two INSERT_EVENTs,
 * COMMIT (the reserve that also starts the action), then BEGIN, TO_SETTLED +
 * INSERT_EVENT, COMMIT (the store's other statements are reads it adds itself), and the completion it
 * stores is as long as the hand loop's and has the same characters outside ASCII.
 */
async function checkSameStatements() {
  const path = freshPath();
  const db = new Database(path);
  const executed = [];
  const stored = [];
  const recording = {
    prepare(sql) {
      const statement = db.prepare(sql);
      const note =
        (method) =>
        (...params) => {
          executed.push(sql);
          if (sql === TO_SETTLED) stored.push(params[2]);
          return statement[method](...params);
        };
      const raw = (toggle) => {
        statement.raw(toggle);
      };
      return { run: note('run'), get: note('get'), all: note('all'), ...(statement.reader ? { raw } : {}) };
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
  stored.length = 0;
  const c = await runner.run(action, { id: 'r1', status: 'done' }, { runId: 'bench' });
  await store.close();
  db.close();
  dispose(path);
  // The writes and the transactions around them: the hand loop commits where the store does.
  const writes = executed.filter((sql) => /^\s*(INSERT|UPDATE)/.test(sql) || sql === BEGIN || sql === COMMIT);
  const expected = [
    ...[BEGIN, INSERT_OPERATION, INSERT_EVENT, INSERT_EVENT, COMMIT],
    ...[BEGIN, TO_SETTLED, INSERT_EVENT, COMMIT],
  ];
  if (
    c.status !== 'verified' ||
    writes.length !== expected.length ||
    writes.some((w, i) => w !== expected[i])
  ) {
    throw new Error(`the hand loop no longer issues the store's statements:\n${writes.join('\n---\n')}`);
  }
  const wide = (text) => [...text].filter((ch) => ch.charCodeAt(0) > 0x7f).join('');
  if (stored.length !== 1 || stored[0].length !== COMPLETION.length || wide(stored[0]) !== wide(COMPLETION)) {
    throw new Error(`the hand loop's completion is not what the runner stores: ${stored[0]}`);
  }
  return executed.length;
}

/** `batches` times, `CONCURRENCY` runs at once (Promise.all); per-action latency is call to resolve. */
/** A runner with group commit on or off over a fresh FULL store file, kept for the whole concurrent half. */
async function concurrentRunner(groupCommit) {
  const { path, store } = await openStore('full', groupCommit);
  return { runner: createRunner({ store }), action: makeAction(), store, path, batch: 0 };
}

async function concurrentLoop(loop, batches) {
  const latencies = [];
  let verified = 0;
  const start = process.hrtime.bigint();
  for (let b = 0; b < batches; b++) {
    const batch = ++loop.batch;
    const completions = await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, i) => {
        const t0 = process.hrtime.bigint();
        const c = await loop.runner.run(
          loop.action,
          { id: `r${batch}-${i}`, status: 'done' },
          { runId: 'bench' },
        );
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        return c;
      }),
    );
    verified += completions.filter((c) => c.status === 'verified').length;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const ops = batches * CONCURRENCY;
  if (verified !== ops) throw new Error(`concurrent loop verified ${verified} of ${ops}`);
  return { rate: ops / seconds, latencies };
}

/** `batches` times, `CONCURRENCY` actions' writes by hand, each stage's in one transaction: group commit's ceiling. */
async function handBatchLoop(hand, batches) {
  const start = process.hrtime.bigint();
  for (let b = 0; b < batches; b++) {
    await hand.batch(Array.from({ length: CONCURRENCY }, () => ++actionSeq));
  }
  return { rate: (batches * CONCURRENCY) / (Number(process.hrtime.bigint() - start) / 1e9) };
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
 * One round: the runner and the hand loop side by side, one action of each in turn (which goes first alternating
 * every action), so machine noise lands on both alike; a loop's rate is its actions over the time its own steps
 * took. The two loops are built once per durability and kept, as a service keeps one store and one runner.
 */
async function round(loops, ops) {
  const nanos = [0n, 0n];
  for (let i = 0; i < ops; i++) {
    const seq = ++actionSeq;
    for (let k = 0; k < 2; k++) {
      const j = (i + k) % 2;
      const start = process.hrtime.bigint();
      await loops[j].step(seq);
      nanos[j] += process.hrtime.bigint() - start;
    }
  }
  const [runner, hand] = nanos.map((n) => ops / (Number(n) / 1e9));
  return { runner, hand };
}
let actionSeq = 0;

async function perAction(durability, ops) {
  const loops = [await runnerSteps(durability, true), await handSteps(durability)];
  try {
    // Cold: the first actions of a fresh process. Then a warm-up, not counted: the runner's functions run once
    // per action, so V8 optimizes the last of them only a few thousand actions in.
    const cold = await round(loops, COLD);
    await round(loops, WARMUP);
    const rates = { runner: [], hand: [] };
    const ratios = [];
    for (let r = 0; r < ROUNDS; r++) {
      const { runner, hand } = await round(loops, ops);
      rates.runner.push(runner);
      rates.hand.push(hand);
      ratios.push(runner / hand);
    }
    return {
      durability,
      ops,
      cold: cold.runner / cold.hand,
      runner: median(rates.runner),
      hand: median(rates.hand),
      ratio: median(ratios),
      ratios,
    };
  } finally {
    for (const loop of loops) await loop.close();
  }
}

async function groupCommit() {
  // One runner per mode for the whole half, warmed up first as the sequential loops are: with a new runner per
  // round, the CPU-bound batched mode ran its code cold while one commit per write mostly waits on the disk.
  const loops = { on: await concurrentRunner(true), off: await concurrentRunner(false) };
  // The same writes by hand, batched as group commit batches them: how fast the disk and SQLite alone allow.
  const hand = await handSteps('full');
  try {
    await concurrentLoop(loops.on, GC_WARMUP);
    await concurrentLoop(loops.off, GC_WARMUP);
    await handBatchLoop(hand, GC_WARMUP);
    const onAll = { rates: [], latencies: [] };
    const off = { rates: [], latencies: [] };
    const handRates = [];
    const ratios = [];
    const ceilings = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, as for the sequential loops.
      const first = round % 2 === 0;
      const a = first ? await concurrentLoop(loops.on, BATCHES_ON) : undefined;
      const b = await concurrentLoop(loops.off, BATCHES_OFF);
      const on = a ?? (await concurrentLoop(loops.on, BATCHES_ON));
      const batched = await handBatchLoop(hand, BATCHES_ON);
      handRates.push(batched.rate);
      ceilings.push(batched.rate / b.rate);
      onAll.rates.push(on.rate);
      onAll.latencies.push(...on.latencies);
      off.rates.push(b.rate);
      off.latencies.push(...b.latencies);
      ratios.push(on.rate / b.rate);
    }
    return { on: onAll, off, ratio: median(ratios), hand: median(handRates), ceiling: median(ceilings) };
  } finally {
    await hand.close();
    for (const loop of Object.values(loops)) {
      await loop.store.close();
      dispose(loop.path);
    }
  }
}

const fs = execFileSync('df', ['-T', DIR], { encoding: 'utf8' }).trim().split('\n').at(-1).split(/\s+/);
try {
  const statements = await checkSameStatements();
  const fsyncBefore = fsyncLatency();
  const full = await perAction('full', SEQ_OPS_FULL);
  const normal = await perAction('normal', SEQ_OPS_NORMAL);
  const gc = await groupCommit();
  const fsyncAfter = fsyncLatency();

  console.log(
    `readback on SQLite — node ${process.version}, ${ROUNDS} rounds, files in ${DIR} (${fs[0]}, ${fs[1]})`,
  );
  const us = (f) => `p50 ${f.p50.toFixed(0)} µs, p99 ${f.p99.toFixed(0)} µs`;
  console.log(`fdatasync of 4 KiB on that disk: before ${us(fsyncBefore)}; after ${us(fsyncAfter)}`);
  console.log('');
  console.log(
    `Per-action cost, sequential (one action at a time, the runner and the hand loop side by side). The hand loop issues the`,
  );
  console.log(
    `store's 5 writes in its 2 transactions (checked on a recorded run); the store runs ${statements} statements per action in all, with its reads and`,
  );
  console.log(
    `BEGIN/COMMIT. Cold: the first ${COLD} actions of each loop in a fresh process; warm: after ${WARMUP} more, not counted.`,
  );
  console.log('');
  console.log(
    '| durability | actions/round | runner actions/s | hand-written SQL actions/s | runner / hand (median of rounds) | per-round ratios | cold runner / hand |',
  );
  console.log('|---|---:|---:|---:|---:|---|---:|');
  for (const r of [full, normal]) {
    console.log(
      `| ${r.durability.toUpperCase()} | ${r.ops} | ${Math.round(r.runner)} | ${Math.round(r.hand)} | ${r.ratio.toFixed(3)} | ${r.ratios.map((x) => x.toFixed(2)).join(', ')} | ${r.cold.toFixed(2)} |`,
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
  console.log(
    `| hand-written SQL, ${CONCURRENCY} actions' writes per transaction (no runner) | ${BATCHES_ON} × ${CONCURRENCY} | ${Math.round(gc.hand)} | | |`,
  );
  console.log('');
  console.log(`on / off (median of per-round ratios): ${gc.ratio.toFixed(1)}×`);
  console.log(
    `the same writes batched by hand / off (how far batching alone goes on this disk and CPU): ${gc.ceiling.toFixed(1)}×`,
  );
} finally {
  rmSync(DIR, { recursive: true, force: true });
}
