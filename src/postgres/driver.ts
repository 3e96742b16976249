import { ReadbackError } from '../errors.js';
import { messageOf } from '../sqlite/driver.js';

/** What a query resolves to; `pg`'s `QueryResult` fits. */
export interface PgResult<Row = Record<string, unknown>> {
  rows: Row[];
  rowCount: number | null;
}

/**
 * The connection surface readback uses, typed structurally so that a `pg.Pool`, a `pg.Client` (and a
 * pooled `PoolClient`) all fit without readback importing pg's types. Every write readback makes is a
 * single statement (CTEs carry the event insert), so it needs no `connect()` and never holds a
 * connection across round trips: each statement is atomic in its own implicit transaction.
 */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<PgResult>;
}

/** A named prepared statement as pg's `query(config)` takes it (pg.Pool and pg.Client both do). */
export interface PgNamedQuery {
  name: string;
  text: string;
  values: unknown[];
}

/** A pool readback created itself and so must end; `pg.Pool` fits. */
export interface PgOwnedPool extends PgQueryable {
  end(): Promise<void>;
  on?(event: 'error', listener: (error: Error) => void): unknown;
}

/** The text to install when the driver is missing. */
export const DRIVER_INSTALL = 'npm install pg@8';

type ImportModule = (specifier: string) => Promise<unknown>;

// A variable specifier keeps the root entry (and TypeScript) from ever resolving the optional peer.
const DRIVER = 'pg';
const importDriver: ImportModule = (specifier) => import(specifier);

/** Loads `pg.Pool`, turning a missing package into a `ReadbackError` that says what to do. */
export async function loadPgPool(
  importModule: ImportModule = importDriver,
): Promise<new (config: { connectionString: string; max?: number }) => PgOwnedPool> {
  let loaded: unknown;
  try {
    loaded = await importModule(DRIVER);
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    if (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND') {
      throw new ReadbackError(
        'invalid_options',
        `readback/postgres with { connectionString } needs the optional peer dependency pg; run \`${DRIVER_INSTALL}\`, or pass a pool as { pool }`,
      );
    }
    throw new ReadbackError('invalid_options', `pg is installed but failed to load (${messageOf(error)})`);
  }
  const mod = loaded as { Pool?: unknown; default?: { Pool?: unknown } };
  const Pool = mod.Pool ?? mod.default?.Pool;
  if (typeof Pool !== 'function') {
    throw new ReadbackError('invalid_options', 'pg did not export a Pool constructor');
  }
  return Pool as new (config: {
    connectionString: string;
    max?: number;
  }) => PgOwnedPool;
}

/** True for a Postgres unique violation (SQLSTATE 23505), optionally on the named constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
