// One reconciler process of the Postgres fleet tests (compiled by test/support/compile.mjs and run with
// plain node). It runs `runner.reconcile` against its own store connection until SIGTERM, over one action
// whose target is a fake service kept in Postgres: `effects` is the target's own log (one row per
// execution it received), and observe counts that log. Nothing here dedupes: a second execution of an
// operation shows up as a second row, and the expectation (exactly one) then fails.
import pg from 'pg';
import { createRunner, defineAction } from '../../src/index.js';
import { postgresStore } from '../../src/postgres/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import type { OperationStore } from '../../src/store/types.js';

/** What the test tells a worker, as JSON in argv[2]. */
export interface WorkerConfig {
  /** The store's connection string; carries this worker's application_name. */
  storeUrl: string;
  /** The fake target's connection string (its own application_name). */
  targetUrl: string;
  schema: string;
  owner: string;
  leaseMs: number;
  concurrency: number;
  /** How long observe holds before it reads the target: a slow read that heartbeats must cover. */
  observeDelayMs: number;
  /** When set, observe records each call in `observing` first, so a test can catch it mid-read. */
  announceObserve?: boolean;
}

/** The last line a worker prints after SIGTERM. */
export interface WorkerReport {
  owner: string;
  pid: number;
  claimed: number;
  byStatus: Record<string, number>;
  errors: number;
  lastError?: string;
  leasesLost: number;
  /** Writes made under a lease token that the store refused (0 rows changed). */
  refused: number;
  refusedIds: string[];
}

const config = JSON.parse(process.argv[2]!) as WorkerConfig;
const q = (table: string) => `"${config.schema}".${table}`;
const target = new pg.Pool({ connectionString: config.targetUrl, max: 3 });
// A terminated or restarted server kills idle connections; the pool drops them and opens new ones.
target.on('error', () => undefined);

const base = await postgresStore({
  connectionString: config.storeUrl,
  schema: config.schema,
  reconnect: { retries: 30, baseMs: 50, maxMs: 1_000 },
  // Four workers share a server other suites use too: keep well inside its max_connections.
  max: 4,
});
let refused = 0;
const refusedIds: string[] = [];
// Counts what the store refused under a lease: the zombie's late completions must land here.
const store: OperationStore = {
  ...base,
  async transition(id, from, patch, event, guard) {
    const result = await base.transition(id, from, patch, event, guard);
    if (result === null && guard?.leaseToken !== undefined) {
      refused++;
      refusedIds.push(id);
    }
    return result;
  },
};

interface Item {
  n: number;
}
const passThrough: StandardSchemaV1<unknown, Item> = {
  '~standard': { version: 1, vendor: 'fleet-test', validate: (value) => ({ value: value as Item }) },
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const apply = defineAction({
  name: 'fleet.apply',
  description: 'Applies item n at the fake target, which logs every execution it receives',
  postcondition: 'the target logged exactly one execution of this operation',
  input: passThrough,
  target: (i) => `item:${i.n}`,
  safeToRepeat: true,
  executeTimeoutMs: 2_000,
  maxInFlightMs: 500,
  poll: { initialDelayMs: 100, maxDelayMs: 300 },
  async execute(_i, ctx) {
    await target.query(`INSERT INTO ${q('effects')} (op_id, attempt, worker) VALUES ($1, $2, $3)`, [
      ctx.operationId,
      ctx.attempt,
      config.owner,
    ]);
    return { ok: true };
  },
  async observe(_i, ctx) {
    if (config.announceObserve) {
      await target.query(`INSERT INTO ${q('observing')} (op_id, worker) VALUES ($1, $2)`, [
        ctx.operationId,
        config.owner,
      ]);
    }
    if (config.observeDelayMs > 0) await sleep(config.observeDelayMs);
    const { rows } = await target.query(`SELECT count(*)::int AS n FROM ${q('effects')} WHERE op_id = $1`, [
      ctx.operationId,
    ]);
    const n = (rows[0] as { n: number }).n;
    return n === 0 ? null : { executions: n };
  },
  expect: () => ({ executions: 1 }),
});

const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
// A killed test run leaves its workers behind; without this they drain on against the server, and the next run's
// drain competes with them. The channel closes when the test process ends, however it ends. Unreferenced, it does
// not keep a worker that is done from exiting.
process.on('disconnect', () => stop.abort());
process.channel?.unref();
const runner = createRunner({ store, actions: [apply], retryBudget: 5 });
const report = await runner.reconcile({
  owner: config.owner,
  leaseMs: config.leaseMs,
  concurrency: config.concurrency,
  idleMs: 100,
  signal: stop.signal,
});
const out: WorkerReport = {
  owner: config.owner,
  pid: process.pid,
  claimed: report.claimed,
  byStatus: report.byStatus,
  errors: report.errors,
  ...(report.lastError ? { lastError: report.lastError } : {}),
  leasesLost: report.leasesLost ?? 0,
  refused,
  refusedIds,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
await store.close();
await target.end();
