import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { storeConformance } from '../../src/testing/store-conformance.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema } = await pgSuite();

describe.skipIf(!available)('postgresStore({ connectionString }) conformance', () => {
  // Each case gets its own fresh schema, so no case sees another's records. The suite runs leases on its
  // own fixed timeline, so the store takes lease times from the caller here; lease-clock.test.ts covers
  // the default database clock.
  const cases = storeConformance(() =>
    postgresStore({ connectionString: PG_URL, schema: tempSchema(), leaseClock: 'caller' }),
  );
  for (const c of cases) it(c.name, c.run);
});

describe.skipIf(!available)('postgresStore({ pool }) conformance', () => {
  let pool: pg.Pool | undefined;
  let ended = false;
  const cases = storeConformance(async () => {
    pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
    ended = false;
    const end = pool.end.bind(pool);
    pool.end = (async () => {
      ended = true;
      return end();
    }) as typeof pool.end;
    return postgresStore({ pool, schema: tempSchema(), leaseClock: 'caller' });
  });
  for (const c of cases) {
    it(c.name, async () => {
      try {
        await c.run();
        // The suite closed the store; the caller's pool must still be open and usable.
        expect(ended).toBe(false);
        expect((await pool!.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      } finally {
        await pool!.end();
      }
    });
  }
});

describe.skipIf(!available)('postgresStore({ pool: pg.Client }) conformance', () => {
  let client: pg.Client | undefined;
  const cases = storeConformance(async () => {
    client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    return postgresStore({ pool: client, schema: tempSchema(), leaseClock: 'caller' });
  });
  for (const c of cases) {
    it(c.name, async () => {
      try {
        await c.run();
        expect((await client!.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      } finally {
        await client!.end();
      }
    });
  }
});
