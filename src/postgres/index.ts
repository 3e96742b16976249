/** readback/postgres: the `OperationStore` for many processes sharing one PostgreSQL database. */
import { ReadbackError } from '../errors.js';
import { messageOf } from '../sqlite/driver.js';
import type { OperationStore } from '../store/types.js';
import { loadPgPool, type PgOwnedPool, type PgQueryable } from './driver.js';
import { migrate, requireSchemaName } from './schema.js';
import { tablesIn } from './sql.js';
import { createPostgresStore } from './store.js';

export { DRIVER_INSTALL, type PgOwnedPool, type PgQueryable, type PgResult } from './driver.js';
export { POSTGRES_SCHEMA_VERSION } from './schema.js';

/** The schema readback's tables live in unless told otherwise. */
export const DEFAULT_SCHEMA = 'readback';

/**
 * Where the store lives: a pool (or client) the caller owns and readback never closes, or a
 * connection string readback opens a `pg.Pool` for and ends on `close()`. `schema` (default
 * `readback`) names the Postgres schema holding every readback table; it is created if missing.
 */
export type PostgresStoreSource =
  | { pool: PgQueryable; schema?: string }
  | { connectionString: string; schema?: string };

/**
 * Opens the Postgres operation store and brings its schema up to date (versioned migrations under
 * an advisory lock, so many processes may open one schema at once). `pg` is loaded only for
 * `{ connectionString }`.
 */
export async function postgresStore(source: PostgresStoreSource): Promise<OperationStore> {
  if (typeof source !== 'object' || source === null) {
    throw new ReadbackError('invalid_options', 'pass { pool } or { connectionString }', 'source');
  }
  const schema = source.schema ?? DEFAULT_SCHEMA;
  requireSchemaName(schema);
  const tables = tablesIn(schema);

  if ('pool' in source) {
    const pool = source.pool;
    if (typeof pool?.query !== 'function') {
      throw new ReadbackError('invalid_options', 'must be a pg Pool or Client (with query())', 'pool');
    }
    await prepare(pool, schema);
    return createPostgresStore({ db: pool, tables, label: `postgres store (schema ${schema})` });
  }

  const { connectionString } = source as { connectionString?: unknown };
  if (typeof connectionString !== 'string' || connectionString.length === 0) {
    throw new ReadbackError('invalid_options', 'must be a postgres:// connection string', 'connectionString');
  }
  const Pool = await loadPgPool();
  const pool: PgOwnedPool = new Pool({ connectionString });
  // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool; without
  // a listener its 'error' event would crash the process. The next query opens a fresh connection.
  pool.on?.('error', () => undefined);
  try {
    await prepare(pool, schema);
  } catch (error) {
    // We opened it, so we end it: a refused store must not leave connections behind.
    await pool.end().catch(() => undefined);
    throw error;
  }
  return createPostgresStore({
    db: pool,
    tables,
    end: () => pool.end(),
    label: `postgres store (schema ${schema})`,
  });
}

// Connection and migration failures are configuration problems: say which schema and why.
async function prepare(db: PgQueryable, schema: string): Promise<void> {
  try {
    await migrate(db, schema);
  } catch (error) {
    if (error instanceof ReadbackError) throw error;
    throw new ReadbackError('invalid_options', `cannot prepare schema ${schema}: ${messageOf(error)}`);
  }
}
