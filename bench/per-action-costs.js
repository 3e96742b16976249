// What one committed action costs besides time: the promises it creates and the bytes it allocates, per
// store. Run with `npm run bench:costs` (builds first). The Postgres row needs a server (READBACK_PG_URL,
// default postgres://postgres@127.0.0.1:5432/test) and is left out with a note when none answers.
// Allocation comes from V8's sampling heap profiler with collected objects included (so it counts garbage,
// not what stays alive), every 512 bytes on average: a close estimate, not an exact count.
import { createHook } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callbackSink, createRunner, memoryStore } from '../dist/index.js';
import { committedAction, PG_URL } from './postgres-shared.js';

const ACTIONS = Number(process.env.BENCH_COST_ACTIONS ?? 2_000);
const dir = mkdtempSync(join(tmpdir(), 'readback-costs-'));

async function openStores() {
  const stores = [['memory', memoryStore(), async () => {}]];
  // The same store with the run record on, to a sink that only counts: what tracing adds to an action.
  const counted = { events: 0 };
  const trace = { sinks: [callbackSink(() => void counted.events++)] };
  stores.push(['memory, traced (callback sink)', memoryStore(), async () => {}, trace]);
  const { sqliteStore } = await import('../dist/sqlite/index.js');
  const sqlite = await sqliteStore({ path: join(dir, 'costs.db') });
  stores.push(['sqlite (FULL)', sqlite, () => sqlite.close()]);
  try {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 3_000 });
    await pool.query('SELECT 1');
    const schema = `bench_costs_${process.pid}`;
    const { postgresStore } = await import('../dist/postgres/index.js');
    const store = await postgresStore({ pool, schema });
    stores.push([
      'postgres',
      store,
      async () => {
        await store.close();
        await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
        await pool.end();
      },
    ]);
  } catch (error) {
    console.log(`(no Postgres at ${PG_URL}: ${error.message}; its row is left out)`);
  }
  return stores;
}

/** Runs `count` committed actions one at a time; every one must verify. */
async function actions(runner, action, prefix, count) {
  for (let i = 0; i < count; i++) {
    const c = await runner.run(action, { id: `${prefix}${i}`, status: 'done' }, { runId: 'costs' });
    if (c.status !== 'verified') throw new Error(`action ${prefix}${i} came back ${c.status}`);
  }
}

async function promisesPerAction(runner, action) {
  let promises = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') promises++;
    },
  }).enable();
  await actions(runner, action, 'p', 200);
  hook.disable();
  return promises / 200;
}

async function bytesPerAction(session, runner, action) {
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await actions(runner, action, 'b', ACTIONS);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  let total = 0;
  const walk = (node) => {
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  return total / ACTIONS;
}

const session = new Session();
session.connect();
const rows = [];
try {
  for (const [name, store, close, trace] of await openStores()) {
    const runner = createRunner({ store, ...(trace ? { trace } : {}) });
    const action = committedAction();
    await actions(runner, action, 'w', 500); // warm-up, not counted
    const promises = await promisesPerAction(runner, action);
    const bytes = await bytesPerAction(session, runner, action);
    rows.push({ name, promises, bytes });
    await close();
  }
} finally {
  session.disconnect();
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `Per committed action (runner.run, Map target), node ${process.version}, ${ACTIONS} actions sampled`,
);
console.log('| store | promises created | bytes allocated (sampled) |');
console.log('|---|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.name} | ${r.promises.toFixed(1)} | ${Math.round(r.bytes).toLocaleString('en-US')} |`);
}
