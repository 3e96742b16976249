// Four reconciler processes, each on its own connections, drain a backlog of operations left in doubt
// by crashed runs. Each operation must be executed once and settled once: checked against the fake
// target's own effect log and the store's event log. READBACK_PG_DRAIN_OPS sets the backlog; by default CI
// (CI=true) drains the 100 000 (about 100 s on this 2-core machine), and a local run 4 000.
import { afterAll, describe, expect, it } from 'vitest';
import {
  expectExactlyOnce,
  killAll,
  removeWorkerScript,
  seedInDoubt,
  startWorkers,
  stopWorkers,
  type Worker,
  waitDrained,
  workerScript,
} from './fleet.js';
import { PG_URL, pgSuite } from './support.js';

const OPS = Number(process.env.READBACK_PG_DRAIN_OPS ?? (process.env.CI === 'true' ? 100_000 : 4_000));
const WORKERS = 4;
// About 3 ms per operation here when the machine is busy; a larger READBACK_PG_DRAIN_OPS gets more time.
const DRAIN_MS = Math.max(50_000, OPS * 5);

const { available, tempSchema } = await pgSuite();
afterAll(removeWorkerScript);

describe.skipIf(!available)('many reconciler processes (Postgres)', () => {
  it(
    `${WORKERS} processes drain ${OPS} operations, each executed and settled exactly once`,
    async () => {
      if (!Number.isInteger(OPS) || OPS < 1)
        throw new Error('READBACK_PG_DRAIN_OPS must be a positive integer');
      const schema = tempSchema();
      await workerScript();
      await seedInDoubt(PG_URL, schema, OPS);

      const workers: Worker[] = [];
      try {
        const started = Date.now();
        await startWorkers(workers, PG_URL, WORKERS, {
          app: `rb-drain-${schema.slice(-6)}`,
          owner: 'drain',
          schema,
          leaseMs: 10_000,
          concurrency: 32,
        });
        await waitDrained(PG_URL, schema, DRAIN_MS, 250);
        const drainMs = Date.now() - started;
        const reports = await stopWorkers(workers);
        console.info(`[readback] ${WORKERS} workers drained ${OPS} operations in ${drainMs} ms`);

        await expectExactlyOnce(PG_URL, schema, OPS);
        // Everyone took part, and between them they claimed every operation at least once.
        for (const r of reports) expect(r.claimed).toBeGreaterThan(0);
        expect(reports.reduce((sum, r) => sum + r.byStatus.verified!, 0)).toBe(OPS);
        expect(reports.map((r) => r.errors)).toEqual([0, 0, 0, 0]);
      } finally {
        killAll(workers);
      }
    },
    DRAIN_MS + 10_000,
  );
});
