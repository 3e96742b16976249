// A Postgres restart mid-run (`pg_ctl restart -m fast`): every connection of every worker is closed and,
// for a moment, new ones are refused. The workers back off, reconnect and finish, losing nothing and
// doubling nothing. This runs on a private cluster started for the test (the shared server on 5432 is
// used by other suites at the same time), so it needs initdb/pg_ctl: see cluster.ts.
import { afterAll, describe, expect, it } from 'vitest';
import { clusterAvailable, type PrivateCluster, startPrivateCluster } from './cluster.js';
import {
  expectExactlyOnce,
  killAll,
  openCount,
  removeWorkerScript,
  seedInDoubt,
  startWorkers,
  stopWorkers,
  type Worker,
  waitDrained,
  waitFor,
  withClient,
  workerScript,
} from './fleet.js';
import { freshSchema } from './support.js';

const available = clusterAvailable();
let cluster: PrivateCluster | undefined;
afterAll(async () => {
  await cluster?.destroy();
  await removeWorkerScript();
});

describe.skipIf(!available)('a Postgres restart mid-run', () => {
  it('workers reconnect with backoff and every operation still settles exactly once', async () => {
    const OPS = 1_500;
    const [started] = await Promise.all([startPrivateCluster(), workerScript()]);
    cluster = started;
    const url = cluster.url;
    const schema = freshSchema();
    await seedInDoubt(url, schema, OPS);
    const bootedAt = () =>
      withClient(
        url,
        async (db) => (await db.query('SELECT pg_postmaster_start_time()::text AS t')).rows[0].t,
      );
    const before = await bootedAt();

    const workers: Worker[] = [];
    try {
      await startWorkers(workers, url, 4, {
        app: 'rb-restart',
        owner: 'restart',
        schema,
        leaseMs: 3_000,
        concurrency: 8,
      });
      await waitFor('a third settled', async () => (await openCount(url, schema)) <= OPS * 0.66, 30_000, 50);
      await cluster.restart();
      expect(await bootedAt()).not.toBe(before);
      // Work was still open when the server went away, so the restart really was mid-run.
      expect(await openCount(url, schema)).toBeGreaterThan(0);

      await waitDrained(url, schema);
      const reports = await stopWorkers(workers);
      await expectExactlyOnce(url, schema, OPS);
      for (const r of reports) expect(r.claimed).toBeGreaterThan(0);
    } finally {
      killAll(workers);
    }
  }, 60_000);
});
