import { describe, expect, it } from 'vitest';
import type { PgQueryable } from '../../src/postgres/driver.js';
import { postgresStore } from '../../src/postgres/index.js';
import { pgSuite } from './support.js';

const { available, tempSchema, tempPool } = await pgSuite();

describe.skipIf(!available)('postgres migrations racing a newer readback', () => {
  // migrate() reads the version before taking the advisory lock. A newer readback starting at the same
  // moment can migrate the schema past us between that read and our lock; the steps under the lock
  // skipped everything and the store opened on a schema it cannot read.
  it('refuses a schema a newer readback migrated after the version check, and changes nothing', async () => {
    const pool = tempPool(2);
    const schema = tempSchema();
    await pool.query(`CREATE SCHEMA "${schema}"`);
    await pool.query(
      `CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
    );
    await pool.query(`INSERT INTO "${schema}".migrations VALUES (99, 'from the future', 0)`);
    // The version check runs as if the newer readback had not committed yet.
    const racing: PgQueryable = {
      query: (text, values) =>
        text.includes('to_regclass')
          ? Promise.resolve({ rows: [{ found: false }], rowCount: 1 })
          : pool.query(text, values),
    };
    await expect(postgresStore({ pool: racing, schema })).rejects.toMatchObject({
      name: 'ReadbackError',
      code: 'store_conflict',
      message: expect.stringMatching(/readback schema v99, newer than this readback/),
    });
    const { rows } = await pool.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [schema],
    );
    expect(rows).toEqual([{ table_name: 'migrations' }]);
  });
});
