// Pools readback opens cancel any statement that runs past their statement timeout (30 s by default). The
// migration at open is one such statement: an index build on a large table, or a second process waiting for
// the first one's migration, could outlast it and fail start-up. The migration runs without that limit; its
// waits for table locks stay bounded by it, and every later statement keeps it.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { MIGRATIONS } from '../../src/postgres/schema.js';
import { tablesIn } from '../../src/postgres/sql.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema, tempPool } = await pgSuite();

/** A second session, holding what `take` takes until released. */
async function session(take: string[], values: unknown[][] = []): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  for (const [i, text] of take.entries()) await client.query(text, values[i] ?? []);
  return {
    async release() {
      await client.end();
    },
  };
}

async function versions(pool: pg.Pool, schema: string): Promise<number[]> {
  const { rows } = await pool.query(`SELECT version FROM "${schema}".migrations ORDER BY version`);
  return rows.map((row: { version: number }) => row.version);
}

describe.skipIf(!available)('the migration at open and the statement timeout', () => {
  it('migrates while another process holds the migration lock for longer than the timeout, which later statements keep', async () => {
    const schema = tempSchema();
    // As a first process migrating a large table would: the advisory lock every migration of this schema takes.
    const migrating = await session(
      ['SELECT pg_advisory_lock(hashtextextended($1, 0))'],
      [[`readback.migrate:${schema}`]],
    );
    const started = Date.now();
    // One connection: the statements after the migration run where the migration ran.
    const opening = postgresStore({ connectionString: PG_URL, schema, statementTimeoutMillis: 200, max: 1 });
    let outcome: unknown;
    opening.then(
      () => {
        outcome = 'opened';
      },
      (error: unknown) => {
        outcome = error;
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    // Four timeouts later the open is still waiting for the lock (it used to fail at 200 ms).
    expect(outcome).toBeUndefined();
    await migrating.release();
    const store = await opening;
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
    const pool = tempPool(1);
    expect(await versions(pool, schema)).toEqual(MIGRATIONS.map((m) => m.version));

    // An ordinary statement on the migration's connection is still cancelled by the statement timeout (not by a
    // lock timeout left over from the migration), and rolls back.
    const locked = await session(['BEGIN', `LOCK TABLE "${schema}".operations IN ACCESS EXCLUSIVE MODE`]);
    try {
      const before = Date.now();
      await expect(store.list({})).rejects.toThrow(/canceling statement due to statement timeout/);
      expect(Date.now() - before).toBeLessThan(5_000);
    } finally {
      await locked.release();
    }
    expect(await store.list({})).toEqual([]);
    await store.close();
  });

  it('bounds a step waiting for a table lock by the statement timeout, and leaves the schema as it was', async () => {
    const schema = tempSchema();
    const pool = tempPool(1);
    // A schema at version 1, as an earlier readback left it; version 2 alters the events table.
    const t = tablesIn(schema);
    await pool.query(`CREATE SCHEMA ${t.schema}`);
    await pool.query(
      `CREATE TABLE ${t.migrations} (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
    );
    for (const statement of MIGRATIONS[0]!.statements(t)) await pool.query(statement);
    await pool.query(`INSERT INTO ${t.migrations} VALUES (1, 'operations and events', 0)`);
    // An operator's open transaction that read the events table holds a lock the ALTER TABLE must wait for.
    const reading = await session(['BEGIN', `SELECT count(*) FROM ${t.events}`]);
    try {
      const started = Date.now();
      await expect(
        postgresStore({ connectionString: PG_URL, schema, statementTimeoutMillis: 300 }),
      ).rejects.toMatchObject({
        code: 'invalid_options',
        message: expect.stringMatching(/canceling statement due to lock timeout/),
      });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await reading.release();
    }
    expect(await versions(pool, schema)).toEqual([1]);
    const { rows } = await pool.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'events' AND column_name = 'write_id'`,
      [schema],
    );
    expect(rows).toEqual([]);

    // Once the lock is gone the same open migrates.
    const store = await postgresStore({ connectionString: PG_URL, schema, statementTimeoutMillis: 300 });
    expect(await versions(pool, schema)).toEqual(MIGRATIONS.map((m) => m.version));
    await store.close();
  });
});
