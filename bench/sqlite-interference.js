// Diagnostic: what readback's own JavaScript costs between SQLite's statements. The runner on the memory store
// (no SQL at all) is timed twice in one process: its actions back to back, and each one right after an action of
// the hand-written SQLite loop (NORMAL, the real disk). Same code, same work; only what ran just before differs.
// Run with `npm run build && node bench/sqlite-interference.js` (BENCH_OPS=3000 BENCH_ROUNDS=5 by default).
import { rmSync } from 'node:fs';
import { createRunner, memoryStore } from '../dist/index.js';
import { DIR, handSteps, makeAction } from './sqlite-shared.js';

const OPS = Number(process.env.BENCH_OPS ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
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
} finally {
  rmSync(DIR, { recursive: true, force: true });
}
