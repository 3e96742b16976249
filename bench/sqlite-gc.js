// What one sequential SQLite action leaves to the garbage collector, runner against the hand-written writes:
// CPU and wall time per action, the young-generation collections' pause per action (PerformanceObserver 'gc'
// entries), and the bytes per action that outlive a minor collection (heap growth across K actions between two
// forced minor collections: objects that should have died young but were kept, copied and promoted). Each loop
// runs alone in a child process, alternating, so neither pays for the other's garbage.
// Run: `npm run build && BENCH_DIR=/dev/shm node bench/sqlite-gc.js` (tmpfs takes the disk out of the figures;
// without BENCH_DIR the files go to the OS temp directory). BENCH_ROUNDS=3 BENCH_OPS=6000 BENCH_DURABILITY=normal.
import { execFileSync } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { handSteps, runnerSteps } from './sqlite-shared.js';
import { median } from './systems.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const OPS = Number(process.env.BENCH_OPS ?? 6000);
const SURVIVOR_WINDOW = 100;
// BENCH_DURABILITY=full runs both loops under synchronous=FULL (an fsync per commit) instead of NORMAL.
const DURABILITY = process.env.BENCH_DURABILITY ?? 'normal';
if (DURABILITY !== 'full' && DURABILITY !== 'normal')
  throw new Error('BENCH_DURABILITY must be full or normal');

async function child(kind) {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const loop = kind === 'hand' ? await handSteps(DURABILITY) : await runnerSteps(DURABILITY, true);
  let i = 0;
  for (; i < 1000; i++) await loop.step(i);

  let minorMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.detail?.kind === 1) minorMs += entry.duration;
  });
  observer.observe({ entryTypes: ['gc'] });
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (const end = i + OPS; i < end; i++) await loop.step(i);
  const wallUs = ((performance.now() - start) * 1000) / OPS;
  const used = process.cpuUsage(cpu);
  await new Promise((resolve) => setTimeout(resolve, 20)); // lets the last gc entries arrive
  observer.disconnect();

  const heap = () =>
    getHeapSpaceStatistics()
      .filter((space) => space.space_name === 'new_space' || space.space_name === 'old_space')
      .reduce((sum, space) => sum + space.space_used_size, 0);
  const windows = [];
  for (let w = 0; w < 5; w++) {
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    const before = heap();
    for (const end = i + SURVIVOR_WINDOW; i < end; i++) await loop.step(i);
    gc({ type: 'minor' });
    windows.push((heap() - before) / SURVIVOR_WINDOW);
  }
  await loop.close();
  return {
    cpuUs: (used.user + used.system) / OPS,
    userUs: used.user / OPS,
    wallUs,
    minorGcUs: (minorMs * 1000) / OPS,
    survivingBytes: median(windows),
  };
}

if (process.argv[2] === '--child') {
  console.log(JSON.stringify(await child(process.argv[3])));
  process.exit(0);
}

const runs = { runner: [], hand: [] };
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ['runner', 'hand'] : ['hand', 'runner'];
  for (const kind of order) {
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', kind], {
      encoding: 'utf8',
      env: process.env,
    });
    runs[kind].push(JSON.parse(out.trim().split('\n').at(-1)));
  }
}
const med = (kind, field) => median(runs[kind].map((run) => run[field]));
console.log(
  `SQLite (${DURABILITY.toUpperCase()}) per sequential action, each loop alone in a process — ${OPS} actions × ${ROUNDS} rounds, node ${process.version}`,
);
console.log('| loop | CPU µs | user CPU µs | wall µs | minor GC pause µs | bytes surviving a minor GC |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const kind of ['runner', 'hand']) {
  console.log(
    `| ${kind} | ${med(kind, 'cpuUs').toFixed(1)} | ${med(kind, 'userUs').toFixed(1)} | ${med(kind, 'wallUs').toFixed(1)} | ${med(kind, 'minorGcUs').toFixed(2)} | ${Math.round(med(kind, 'survivingBytes'))} |`,
  );
}
const ratios = runs.hand.map((hand, i) => hand.wallUs / runs.runner[i].wallUs);
console.log(`runner / hand actions per second (median of per-round ratios): ${median(ratios).toFixed(2)}`);
console.log(
  '(medians over rounds; surviving bytes: heap growth per action across 100 actions between forced minor GCs)',
);
