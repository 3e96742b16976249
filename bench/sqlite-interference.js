// Diagnostic: what readback's own JavaScript costs between SQLite's statements. The runner on the memory store
// (no SQL at all) is timed twice in one process: its actions back to back, and each one right after an action of
// the hand-written SQLite loop (NORMAL, the real disk). Same code, same work; only what ran just before differs.
// The second half times the whole step instead, three ways interleaved action by action: the hand loop's action
// alone; followed by a spin that touches only registers; followed by one action of the runner over the stand-in
// handle (its JavaScript with no SQL). Each extra is also timed alone: one that cost in place only its own time
// would add exactly that to the step, and the spin shows how much of the rest is time rather than footprint.
// Run with `npm run build && node bench/sqlite-interference.js` (BENCH_OPS=3000 BENCH_ROUNDS=5 by default;
// BENCH_STEPS=15000 interleaved rounds in the second half, BENCH_SPIN=56000 iterations, ~25 µs here).
import { rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { createRunner, memoryStore } from '../dist/index.js';
import { sqliteStore } from '../dist/sqlite/index.js';
import { OPERATION_COLUMN_NAMES } from '../dist/sqlite/sql.js';
import { DIR, handSteps, makeAction } from './sqlite-shared.js';
import { standInHandle } from './stand-in.js';

const OPS = Number(process.env.BENCH_OPS ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const STEPS = Number(process.env.BENCH_STEPS ?? 15_000);
const SPIN = Number(process.env.BENCH_SPIN ?? 56_000);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The memory-store runner's actions, each timed alone; `between` runs before each one, untimed.
async function runnerMicros(between) {
  const runner = createRunner({ store: memoryStore() });
  const action = makeAction();
  let ns = 0n;
  for (let i = 0; i < OPS; i++) {
    if (between) await between(i);
    const start = process.hrtime.bigint();
    const c = await runner.run(action, { id: `r${i}`, status: 'done' }, { runId: 'bench' });
    ns += process.hrtime.bigint() - start;
    if (c.status !== 'verified') throw new Error(`action ${i} came back ${c.status}`);
  }
  return Number(ns) / 1e3 / OPS;
}

try {
  const hand = await handSteps('normal');
  await runnerMicros(hand.step); // warm-up, not counted
  await runnerMicros();
  const alone = [];
  const between = [];
  const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating which goes first, so a slow spell of the machine lands on both.
    const a = r % 2 === 0 ? await runnerMicros() : undefined;
    const b = await runnerMicros(hand.step);
    const c = a ?? (await runnerMicros());
    alone.push(c);
    between.push(b);
    ratios.push(b / c);
  }
  await hand.close();
  console.log(`readback runner on the memory store, µs per action (median of ${ROUNDS} rounds × ${OPS})`);
  console.log(
    '| back to back | each after a hand-written SQLite action (NORMAL) | ratio (median per round) |',
  );
  console.log('|---:|---:|---:|');
  console.log(
    `| ${median(alone).toFixed(1)} | ${median(between).toFixed(1)} | ${median(ratios).toFixed(2)}× |`,
  );
  console.log('');
  await wholeSteps();
} finally {
  rmSync(DIR, { recursive: true, force: true });
}

// The second half: the hand loop's step with nothing, a spin, or the stand-in runner's action after it.
async function wholeSteps() {
  const real = new Database(':memory:');
  await sqliteStore({ database: real });
  const handle = standInHandle(OPERATION_COLUMN_NAMES, real);
  const runner = createRunner({ store: await sqliteStore({ database: handle.db }) });
  const action = makeAction();
  let runs = 0;
  const standInRun = async () => {
    const c = await runner.run(action, { id: `f${++runs}`, status: 'done' }, { runId: 'bench' });
    if (c.status !== 'verified') throw new Error(`the stand-in runner's action came back ${c.status}`);
    // Its rows are kept in a Map: forget them now and then, so they do not pile up over the run.
    if (runs % 1_000 === 0) handle.clear();
  };
  let sink = 0;
  const spin = () => {
    let s = 0;
    for (let k = 0; k < SPIN; k++) s = (s + k * 2654435761) | 0;
    sink += s;
  };
  const aloneMicros = async (extra, n) => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await extra();
    return Number(process.hrtime.bigint() - start) / n / 1000;
  };
  await aloneMicros(standInRun, 20_000);
  const alone = { spin: await aloneMicros(spin, 20_000), runner: await aloneMicros(standInRun, 20_000) };

  const hand = await handSteps('normal');
  const extras = [async () => {}, spin, standInRun];
  const nanos = [0n, 0n, 0n];
  let seq = 0;
  try {
    for (let i = 0; i < OPS; i++) {
      for (const extra of extras) {
        await hand.step(++seq);
        await extra();
      }
    }
    for (let i = 0; i < STEPS; i++) {
      for (let k = 0; k < extras.length; k++) {
        // Which variant goes first turns with each round.
        const j = (i + k) % extras.length;
        const start = process.hrtime.bigint();
        await hand.step(++seq);
        await extras[j]();
        nanos[j] += process.hrtime.bigint() - start;
      }
    }
  } finally {
    await hand.close();
  }
  const [bare, withSpin, withRunner] = nanos.map((n) => Number(n) / STEPS / 1000);
  const row = (label, own, total) =>
    console.log(
      `| ${label} | ${own.toFixed(1)} | ${total.toFixed(0)} | ${(total - bare).toFixed(1)} | ${((total - bare) / own).toFixed(2)}× |`,
    );
  console.log(`The hand loop's action (NORMAL) and what runs after it, µs (${STEPS} rounds after ${OPS})`);
  console.log('| after each hand-loop action | alone | step + extra | added | added / alone |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(`| nothing | | ${bare.toFixed(0)} | | |`);
  row('a spin that touches only registers', alone.spin, withSpin);
  row("the runner's action over the stand-in handle", alone.runner, withRunner);
  if (sink === 0.5) console.log(sink);
}
