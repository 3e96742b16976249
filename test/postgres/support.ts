import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';
import type { PgQueryable, PgResult } from '../../src/postgres/driver.js';

/** Where the Postgres tests connect; point them elsewhere with READBACK_PG_URL. */
export const PG_URL = process.env.READBACK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const HOW =
  `set READBACK_PG_URL to a reachable server (default ${'postgres://postgres@127.0.0.1:5432/test'}), ` +
  'e.g. READBACK_PG_URL=postgres://user:pass@host:5432/db npx vitest run test/postgres';

/**
 * Whether Postgres answers. Under CI=true an unreachable server is an error (the tests must not
 * silently pass by skipping); locally the suites skip with a message saying how to point them at one.
 */
export async function pgAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    const why = `Postgres at ${PG_URL} is unreachable (${(error as Error).message})`;
    if (process.env.CI === 'true')
      throw new Error(`${why}; under CI=true the Postgres tests must run: ${HOW}`);
    console.warn(`[readback] skipping the Postgres tests: ${why}; ${HOW}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** PG_URL with `schema=` added to whatever query it already has: a store spec the CLI takes. */
export function storeUrl(schema: string): string {
  return `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`;
}

/** A schema name no other test uses. */
export function freshSchema(): string {
  return `readback_test_${randomBytes(6).toString('hex')}`;
}

/** Drops the given schemas (and everything in them) with a short-lived connection. */
export async function dropSchemas(schemas: Iterable<string>): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** What one test file's Postgres tests share; schemas and pools made through it are cleaned up after them. */
export interface PgSuite {
  /** Whether Postgres answers (see pgAvailable); when false, the file's suites skip. */
  available: boolean;
  /** The schemas dropped after the file's tests; a test that creates another schema adds it here. */
  schemas: Set<string>;
  /** A fresh schema name, dropped after the file's tests. */
  tempSchema(): string;
  /** A pool on PG_URL with at most `max` connections, ended after the file's tests. */
  tempPool(max: number): pg.Pool;
}

/** Checks Postgres once for a test file, and after its tests ends the pools and drops the schemas it made. */
export async function pgSuite(): Promise<PgSuite> {
  const available = await pgAvailable();
  const schemas = new Set<string>();
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    if (available && schemas.size > 0) await dropSchemas(schemas);
  });
  return {
    available,
    schemas,
    tempSchema() {
      const schema = freshSchema();
      schemas.add(schema);
      return schema;
    },
    tempPool(max) {
      const pool = new pg.Pool({ connectionString: PG_URL, max });
      pools.push(pool);
      return pool;
    },
  };
}

/** What only the batched statements of group commit contain. */
export const BATCHED = 'jsonb_array_elements';

/** The statements a store sent: each text, and for a batched transition how many transitions it carried. */
export interface Sent {
  text: string;
  batch?: number;
}

/** A pool that records every statement; `hook` may replace what the server is asked. */
export function recordingPool(
  real: pg.Pool,
  hook?: (text: string, values: unknown[] | undefined) => Promise<PgResult> | undefined,
) {
  const sent: Sent[] = [];
  const db: PgQueryable & { totalCount: number } = {
    totalCount: 0, // a number marks it as a pool, as pg.Pool does
    query(config: unknown, values?: unknown[]) {
      const { text, values: v } =
        typeof config === 'string'
          ? { text: config, values }
          : (config as { text: string; values: unknown[] });
      sent.push(text.includes(BATCHED) ? { text, batch: JSON.parse(v![0] as string).length } : { text });
      return hook?.(text, v) ?? (real.query(config as string, values) as Promise<PgResult>);
    },
  };
  return { db, sent };
}
