// A statement stuck behind a lock another session holds (an operator's open transaction, a long ALTER TABLE)
// waits forever without a statement timeout, and the run or reconciler that sent it waits with it. Pools
// readback opens carry one (30 s unless told otherwise); a cancelled statement rolls back, and the run reports
// the store failure honestly: `failed` when nothing ran, `unknown` once the effect may have landed, after which
// a reconciler settles it when the lock is gone.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, loadPgPool } from '../../src/postgres/driver.js';
import { postgresStore } from '../../src/postgres/index.js';
import { anyInput } from '../support/any-input.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema } = await pgSuite();

/** A second session that takes the operations table's strongest lock, as a migration or an operator might. */
async function lockTable(schema: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE "${schema}".operations IN ACCESS EXCLUSIVE MODE`);
  return {
    async release() {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

function tracked(onExecute: () => Promise<void> = async () => {}) {
  const rows = new Map<string, string>();
  let executed = 0;
  const action = defineAction({
    name: 'pg.set_status',
    description: 'Sets a row status',
    input: anyInput,
    target: (i: { id: string }) => `row:${i.id}`,
    // A short in-flight window, so the reconciler may read the record back soon after a lost settle.
    executeTimeoutMs: 1_000,
    maxInFlightMs: 100,
    postcondition: 'The row has the requested status.',
    async execute(i: { id: string; status: string }) {
      executed++;
      rows.set(i.id, i.status);
      await onExecute();
      return { ok: true };
    },
    observe: (i: { id: string }) => (rows.has(i.id) ? { status: rows.get(i.id) } : null),
    expect: (i: { status: string }) => ({ status: i.status }),
  });
  return { action, executed: () => executed };
}

describe.skipIf(!available)('statement timeout on the pools readback opens', () => {
  it('is 30 s by default on every pool loadPgPool makes (the store and the CLI use it)', async () => {
    const Pool = await loadPgPool();
    const pool = new Pool({ connectionString: PG_URL });
    try {
      const { rows } = await pool.query('SHOW statement_timeout');
      expect(rows[0]).toEqual({ statement_timeout: '30s' });
      expect(DEFAULT_STATEMENT_TIMEOUT_MS).toBe(30_000);
    } finally {
      await pool.end();
    }
  });

  it('the URL may set it instead', async () => {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: `${PG_URL}?statement_timeout=300`, schema });
    const { action, executed } = tracked();
    const lock = await lockTable(schema);
    try {
      const c = await createRunner({ store }).run(action, { id: 'u', status: 'done' }, { runId: 'r0' });
      expect(c).toMatchObject({ status: 'failed', errorCode: 'store_unavailable' });
      expect(c.reason).toMatch(/statement timeout/);
      expect(executed()).toBe(0);
    } finally {
      await lock.release();
      await store.close();
    }
  });

  it('0 sets none (the server’s own setting applies)', async () => {
    const Pool = await loadPgPool();
    const pool = new Pool({ connectionString: PG_URL, statement_timeout: 0 });
    try {
      expect((await pool.query('SHOW statement_timeout')).rows[0]).toEqual({ statement_timeout: '0' });
    } finally {
      await pool.end();
    }
  });

  it('refuses a bad value, and a value given both as an option and in the URL, naming the field', async () => {
    for (const bad of [-1, 1.5, '100', Number.NaN]) {
      await expect(
        postgresStore({ connectionString: PG_URL, statementTimeoutMillis: bad as number }),
      ).rejects.toMatchObject({ code: 'invalid_options', field: 'statementTimeoutMillis' });
    }
    await expect(
      postgresStore({ connectionString: `${PG_URL}?statement_timeout=100`, statementTimeoutMillis: 200 }),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'statementTimeoutMillis' });
  });

  it('a reservation stuck behind a lock fails within the timeout and nothing is executed', async () => {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema, statementTimeoutMillis: 300 });
    const { action, executed } = tracked();
    const runner = createRunner({ store });
    const lock = await lockTable(schema);
    try {
      const started = Date.now();
      const c = await runner.run(action, { id: 'a', status: 'done' }, { runId: 'r1' });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(c).toMatchObject({ status: 'failed', errorCode: 'store_unavailable' });
      expect(c.reason).toMatch(/statement timeout/);
      expect(executed()).toBe(0);
    } finally {
      await lock.release();
    }
    // The cancelled INSERT rolled back: no record of it, and the store works once the lock is gone.
    expect(await store.list({})).toEqual([]);
    const again = await runner.run(action, { id: 'a', status: 'done' }, { runId: 'r1' });
    expect(again.status).toBe('verified');
    expect(executed()).toBe(1);
    await store.close();
  });

  it('a settle stuck behind a lock after execute is unknown, and a reconciler settles it once the lock is gone', async () => {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema, statementTimeoutMillis: 300 });
    let lock: { release(): Promise<void> } | undefined;
    // The lock is taken while the effect lands, so the writes after execute are the ones that wait.
    const { action, executed } = tracked(async () => {
      lock = await lockTable(schema);
    });
    const runner = createRunner({ store });
    const c = await runner.run(action, { id: 'b', status: 'done' }, { runId: 'r2' });
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'store_unavailable' });
    expect(c.reason).toMatch(/statement timeout/);
    expect(executed()).toBe(1);
    await lock?.release();

    const record = await store.get(c.operationId);
    expect(record?.lifecycle).toBe('executing');
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, (record?.nextPollAt ?? 0) - Date.now() + 50)),
    );
    const report = await runner.reconcile({ once: true, leaseMs: 5_000 });
    expect(report.byStatus.verified).toBe(1);
    const settled = await store.get(c.operationId);
    expect(settled).toMatchObject({ lifecycle: 'settled', status: 'verified' });
    expect(executed()).toBe(1);
    await store.close();
  });
});
