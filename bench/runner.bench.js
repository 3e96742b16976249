// Runner throughput on the memory store against the same execute + observe + compare written by hand.
// Run with `npm run bench` (builds first). Rounds alternate between the two loops so machine noise hits
// both alike; we report per-round rates, their medians and the median of per-round ratios.
import { createRunner, memoryStore } from '../dist/index.js';
import { makeAction, makeSystem, median, startServer, stopServer } from './systems.js';

const OPS = Number(process.env.BENCH_OPS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

async function runnerLoop(io) {
  const system = makeSystem(io);
  const action = makeAction(system);
  const runner = createRunner({ store: memoryStore() });
  let verified = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) {
    const c = await runner.run(action, { id: `r${i}`, status: 'done' }, { runId: 'bench' });
    if (c.status === 'verified') verified++;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (verified !== OPS) throw new Error(`runner verified ${verified} of ${OPS}`);
  return OPS / seconds;
}

async function handLoop(io) {
  const system = makeSystem(io);
  let verified = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) {
    const input = { id: `r${i}`, status: 'done' };
    await system.write(input.id, input.status);
    const row = await system.read(input.id);
    if (row !== null && row.status === input.status) verified++;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (verified !== OPS) throw new Error(`hand loop verified ${verified} of ${OPS}`);
  return OPS / seconds;
}

async function measure(io) {
  await runnerLoop(io);
  await handLoop(io); // warm-up, not counted
  const runner = [];
  const hand = [];
  const ratios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r = await runnerLoop(io);
    const h = await handLoop(io);
    runner.push(r);
    hand.push(h);
    ratios.push(r / h);
  }
  return { io, runner: median(runner), hand: median(hand), ratio: median(ratios) };
}

await startServer();
const results = [];
for (const io of ['http', 'turn', 'none']) results.push(await measure(io));
stopServer();
console.log(
  `readback runner vs hand-written loop — ${OPS} committed actions × ${ROUNDS} rounds, node ${process.version}`,
);
console.log('| I/O model | runner ops/s (median) | hand ops/s (median) | ratio (median of rounds) |');
console.log('|---|---:|---:|---:|');
for (const r of results) {
  const label = {
    http: 'HTTP on loopback (keep-alive)',
    turn: 'one event-loop turn per call',
    none: 'none (pure in-memory)',
  }[r.io];
  console.log(`| ${label} | ${Math.round(r.runner)} | ${Math.round(r.hand)} | ${r.ratio.toFixed(2)} |`);
}
