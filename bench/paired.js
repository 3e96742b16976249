// Before/after comparison of two builds of readback in one process: each build gets its own runner and store,
// and they take turns batch by batch (which goes first alternates), so a slow spell of the machine hits both
// alike; we report medians of per-batch wall and CPU time per action and the median of the paired ratios.
// Usage: node bench/paired.js <distA> <distB>   (e.g. a `git archive` of an older commit built with tsc, and ./dist)
// How fast a build runs also depends on the process it runs in (code placement, heap layout): two copies of one
// build differ by up to ±7% in one process, though never the same way twice. So the comparison runs in
// BENCH_PROCESSES child processes (default 6), the builds swapping places from one to the next, and the result is
// the median of their B / A ratios. BENCH_ONCE=1 runs one process.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { standInHandle } from './stand-in.js';
import { median } from './systems.js';

const [distA, distB] = process.argv.slice(2, 4).map((d) => resolve(d));
if (!distA || !distB) throw new Error('usage: node bench/paired.js <distA> <distB>');
const STORE = process.env.BENCH_STORE ?? 'fake';
const BATCH = Number(process.env.BENCH_BATCH ?? { sqlite: 500, pg: 50 }[STORE] ?? 2000);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 30);
// Runs at once (Promise.all) in each step of a batch: 64 measures group commit; 1 (the default), one at a time.
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1);
const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'readback-paired-'));
const cleanups = [];

// The trace settings a side runs with (BENCH_TRACE, or BENCH_TRACE_A for side A), from its build's own sink.
function traceOptions(callbackSink, n) {
  // Side A's setting stays with build A when a process has the builds in swapped places.
  const sideA = process.env.BENCH_SWAPPED === '1' ? n === 1 : n === 0;
  const kind = (sideA ? process.env.BENCH_TRACE_A : undefined) ?? process.env.BENCH_TRACE ?? 'none';
  if (kind === 'none') return undefined;
  let events = 0;
  if (kind === 'callback') return { sinks: [callbackSink(() => void events++)] };
  if (kind === 'idle') return { sinks: [callbackSink(() => void events++, { types: ['run.error'] })] };
  throw new Error(`BENCH_TRACE must be none, idle or callback, not ${kind}`);
}

async function build(dist, n) {
  const load = (path) => import(pathToFileURL(join(dist, path)).href);
  const { callbackSink, createRunner, defineAction, memoryStore } = await load('index.js');
  const target = new Map();
  const action = defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: { '~standard': { version: 1, vendor: 'bench', validate: (value) => ({ value }) } },
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: async (input) => {
      target.set(input.id, { id: input.id, status: input.status });
      return { ok: true };
    },
    observe: async (input) => target.get(input.id) ?? null,
    expect: (input) => ({ status: input.status }),
  });
  let store;
  let fresh = false;
  let clear = () => {};
  if (STORE === 'memory') {
    fresh = true;
  } else if (STORE === 'fake') {
    const { sqliteStore } = await load('sqlite/index.js');
    const { OPERATION_COLUMN_NAMES } = await load('sqlite/sql.js');
    const real = new Database(':memory:');
    await sqliteStore({ database: real });
    const handle = standInHandle(OPERATION_COLUMN_NAMES, real);
    store = await sqliteStore({ database: handle.db });
    fresh = true;
    clear = handle.clear;
  } else if (STORE === 'sqlite') {
    const { sqliteStore } = await load('sqlite/index.js');
    const durability = process.env.BENCH_DURABILITY ?? 'normal';
    store = await sqliteStore({ path: join(dir, `${n}.db`) }, { durability });
  } else if (STORE === 'pg') {
    const { postgresStore } = await load('postgres/index.js');
    const pg = (await import('pg')).default;
    const url = process.env.READBACK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const schema = `bench_paired_${process.pid}_${n}`;
    store = await postgresStore({ pool, schema });
    cleanups.push(async () => {
      await store.close();
      await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
      await pool.end();
    });
  } else {
    throw new Error(`BENCH_STORE must be fake, memory, sqlite or pg, not ${STORE}`);
  }
  const trace = traceOptions(callbackSink, n);
  const make = () => createRunner({ store: store ?? memoryStore(), ...(trace ? { trace } : {}) });
  const side = { dist, runner: make() };
  // Stores that keep everything in memory start each batch empty, so neither side pays for a growing heap.
  side.reset = () => {
    target.clear();
    clear();
    if (fresh) side.runner = make();
  };
  side.action = action;
  side.fresh = fresh;
  return side;
}

let next = 0;
async function batch(side) {
  if (side.fresh) side.reset();
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let j = 0; j < BATCH; j++) {
    const runs = [];
    for (let k = 0; k < CONCURRENCY; k++, next++) {
      runs.push(side.runner.run(side.action, { id: `r${next}`, status: 'done' }, { runId: 'bench' }));
    }
    for (const c of await Promise.all(runs)) {
      if (c.status !== 'verified') throw new Error(`${side.dist}: action came back ${c.status}: ${c.reason}`);
    }
  }
  const used = process.cpuUsage(cpu);
  const actions = BATCH * CONCURRENCY;
  return { wall: ((performance.now() - start) * 1000) / actions, cpu: (used.user + used.system) / actions };
}

// Unless told to run once: child processes with the builds in either place, and the median of their B / A.
if (process.env.BENCH_ONCE !== '1') {
  const ratios = { wall: [], cpu: [] };
  const processes = Number(process.env.BENCH_PROCESSES ?? 6);
  for (let i = 0; i < processes; i++) {
    const swapped = i % 2 === 1;
    const out = execFileSync(
      process.execPath,
      [process.argv[1], ...(swapped ? [distB, distA] : [distA, distB])],
      {
        env: { ...process.env, BENCH_ONCE: '1', BENCH_SWAPPED: swapped ? '1' : '0' },
        encoding: 'utf8',
      },
    );
    process.stdout.write(out);
    const [, wall, cpu] = out.match(/B \/ A: wall ([\d.]+) .*CPU ([\d.]+)/);
    // A swapped process measured A / B.
    ratios.wall.push(swapped ? 1 / Number(wall) : Number(wall));
    ratios.cpu.push(swapped ? 1 / Number(cpu) : Number(cpu));
  }
  const each = ratios.wall.map((r) => r.toFixed(3)).join(', ');
  console.log(
    `B / A over ${processes} processes (median): wall ${median(ratios.wall).toFixed(3)} (${each}), CPU ${median(ratios.cpu).toFixed(3)}`,
  );
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

try {
  const sides = [await build(distA, 0), await build(distB, 1)];
  for (let w = 0; w < 4; w++) for (const side of sides) await batch(side);
  const results = [[], []];
  const ratios = [];
  for (let p = 0; p < PAIRS; p++) {
    const order = p % 2 ? [0, 1] : [1, 0];
    const out = [];
    for (const k of order) out[k] = await batch(sides[k]);
    results[0].push(out[0]);
    results[1].push(out[1]);
    ratios.push(out[1].wall / out[0].wall);
  }
  console.log(`paired: ${STORE} store, ${PAIRS} pairs of ${BATCH} actions, node ${process.version}`);
  console.log('| build | wall µs/action | CPU µs/action |');
  console.log('|---|---:|---:|');
  sides.forEach((side, k) => {
    const wall = median(results[k].map((r) => r.wall)).toFixed(1);
    console.log(`| ${side.dist} | ${wall} | ${median(results[k].map((r) => r.cpu)).toFixed(1)} |`);
  });
  const cpuRatio = median(results[1].map((r) => r.cpu)) / median(results[0].map((r) => r.cpu));
  console.log(
    `B / A: wall ${median(ratios).toFixed(3)} (median of paired ratios), CPU ${cpuRatio.toFixed(3)}`,
  );
} finally {
  for (const cleanup of cleanups) await cleanup();
  rmSync(dir, { recursive: true, force: true });
}
