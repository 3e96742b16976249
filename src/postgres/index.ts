/** readback/postgres: the `OperationStore` for many processes sharing one PostgreSQL database. */
import { ReadbackError } from '../errors.js';
import { messageOf } from '../sqlite/driver.js';
import type { OperationStore } from '../store/types.js';
import {
  DEFAULT_CONNECTION_TIMEOUT_MS,
  loadPgPool,
  type PgOwnedPool,
  type PgQueryable,
  serverOf,
} from './driver.js';
import { isConnectionError, type ReconnectOptions, type ReconnectPolicy, reconnectPolicy } from './retry.js';
import { migrate, requireSchemaName } from './schema.js';
import { tablesIn } from './sql.js';
import { createPostgresStore, type LeaseClock } from './store.js';

export {
  DEFAULT_CONNECTION_TIMEOUT_MS,
  DRIVER_INSTALL,
  type PgOwnedPool,
  type PgQueryable,
  type PgResult,
} from './driver.js';
export { isConnectionError, type ReconnectOptions } from './retry.js';
export { POSTGRES_SCHEMA_VERSION, preMigrationStatements } from './schema.js';
export type { LeaseClock } from './store.js';

// The forms pg's connection-string parser reads as meant: a URL with a postgres scheme, or a socket path.
const CONNECTION_STRING = /^(?:postgres(?:ql)?:\/\/|socket:|\/)/i;

/** The schema readback's tables live in unless told otherwise. */
export const DEFAULT_SCHEMA = 'readback';

/** Options shared by both ways of opening the store. */
export interface PostgresStoreOptions {
  /** The Postgres schema holding every readback table (default `readback`); created if missing. */
  schema?: string;
  /**
   * Whose clock leases run on (default 'database'): the server's clock_timestamp() sets every lease's
   * expiry and decides whether it is live, so hosts with skewed clocks can neither steal a live lease
   * nor hold one past its time. 'caller' uses the `now` passed to claimDue/renewLease instead: for
   * one host, or a test that drives its own timeline (the conformance suite does).
   */
  leaseClock?: LeaseClock;
  /**
   * Send readback's statements as named prepared statements (default true): pg prepares each once per
   * connection and then only binds and executes it. Turn off behind PgBouncer in transaction mode
   * before 1.21 (it cannot carry prepared statements between transactions), or for a `pool` whose
   * `query` takes only `(text, values)`.
   */
  namedStatements?: boolean;
  /**
   * Group commit (default true): the reserves and transitions called in one turn of the event loop (the
   * writes a reconciler round or a `Promise.all` of runs makes together) are sent on the next macrotask,
   * those of one shape as ONE statement that applies each write's own key check or compare-and-set and
   * appends its event, so they share one round trip and one commit; a lone writer sends at once. Each call
   * still resolves to exactly what it would alone, and only after the statement carrying it committed.
   * `false` sends every write by itself at once.
   */
  groupCommit?: boolean;
}

/**
 * Where the store lives: a pool (or client) the caller owns and readback never closes, or a
 * connection string readback opens a `pg.Pool` for and ends on `close()`. Only for the latter does
 * readback retry statements after connection errors, with jittered backoff (`reconnect`, or
 * `false` to turn it off).
 */
export type PostgresStoreSource =
  | ({ pool: PgQueryable } & PostgresStoreOptions)
  | ({
      connectionString: string;
      reconnect?: ReconnectOptions | false;
      /** Connections in the pool readback opens (pg's default is 10); mind the server's max_connections. */
      max?: number;
      /**
       * How long to wait for a connection, new or free in the pool, before failing (default: the URL's
       * `connect_timeout` in seconds, else 10 s; 0 waits forever, as pg does by default).
       */
      connectionTimeoutMillis?: number;
      /**
       * How long the server lets one statement run before cancelling it (default: the URL's
       * `statement_timeout`, else 30 s; 0 sets none). A cancelled statement rolls back and its store call fails.
       */
      statementTimeoutMillis?: number;
    } & PostgresStoreOptions);

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
  const leaseClock = source.leaseClock ?? 'database';
  const namedStatements = source.namedStatements ?? true;
  if (typeof namedStatements !== 'boolean') {
    throw new ReadbackError('invalid_options', 'must be true or false', 'namedStatements');
  }
  const groupCommit = source.groupCommit ?? true;
  if (typeof groupCommit !== 'boolean') {
    throw new ReadbackError('invalid_options', 'must be true or false', 'groupCommit');
  }
  if (leaseClock !== 'database' && leaseClock !== 'caller') {
    throw new ReadbackError('invalid_options', "must be 'database' or 'caller'", 'leaseClock');
  }

  if ('pool' in source && 'connectionString' in source) {
    throw new ReadbackError('invalid_options', 'pass { pool } or { connectionString }, not both', 'source');
  }
  if ('pool' in source) {
    const pool = source.pool;
    if (typeof pool?.query !== 'function') {
      throw new ReadbackError('invalid_options', 'must be a pg Pool or Client (with query())', 'pool');
    }
    if ((source as { reconnect?: unknown }).reconnect !== undefined) {
      throw new ReadbackError(
        'invalid_options',
        'reconnect applies only to a pool readback opens ({ connectionString }); your pool is yours to manage',
        'reconnect',
      );
    }
    await prepare(pool, schema);
    return createPostgresStore({
      db: pool,
      tables,
      leaseClock,
      namedStatements,
      groupCommit,
      label: `postgres store (schema ${schema})`,
    });
  }

  const { connectionString, reconnect, max, connectionTimeoutMillis, statementTimeoutMillis } = source as {
    connectionString?: unknown;
    reconnect?: unknown;
    max?: unknown;
    connectionTimeoutMillis?: unknown;
    statementTimeoutMillis?: unknown;
  };
  if (typeof connectionString !== 'string' || connectionString.length === 0) {
    throw new ReadbackError('invalid_options', 'must be a postgres:// connection string', 'connectionString');
  }
  // pg reads anything else as a URL relative to postgres://base and fails later with "ENOTFOUND base".
  // The text itself is left out of the message: it may hold a password.
  if (!CONNECTION_STRING.test(connectionString)) {
    throw new ReadbackError(
      'invalid_options',
      'must be a postgres:// or postgresql:// URL (or a socket path starting with /)',
      'connectionString',
    );
  }
  if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 1)) {
    throw new ReadbackError('invalid_options', 'must be a whole number ≥ 1', 'max');
  }
  requireMillis(connectionTimeoutMillis, 'connectionTimeoutMillis');
  requireMillis(statementTimeoutMillis, 'statementTimeoutMillis');
  // pg lets the URL's `statement_timeout` override any option: two values would leave the option unused in silence.
  if (statementTimeoutMillis !== undefined && urlParam(connectionString, 'statement_timeout') !== null) {
    throw new ReadbackError(
      'invalid_options',
      'the connection string already sets statement_timeout; give it in one place',
      'statementTimeoutMillis',
    );
  }
  const timeout = (connectionTimeoutMillis as number | undefined) ?? urlTimeout(connectionString);
  let retry: ReconnectPolicy | undefined;
  if (reconnect !== false) {
    if (reconnect !== undefined && (typeof reconnect !== 'object' || reconnect === null)) {
      throw new ReadbackError('invalid_options', 'must be an object or false', 'reconnect');
    }
    retry = reconnectPolicy(reconnect as ReconnectOptions | undefined);
  }
  const Pool = await loadPgPool();
  const pool: PgOwnedPool = new Pool({
    connectionString,
    ...(max === undefined ? {} : { max }),
    ...(timeout === undefined ? {} : { connectionTimeoutMillis: timeout }),
    ...(statementTimeoutMillis === undefined ? {} : { statement_timeout: statementTimeoutMillis as number }),
  });
  // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool; without
  // a listener its 'error' event would crash the process. The next query opens a fresh connection.
  pool.on?.('error', () => undefined);
  try {
    // Not retried: a server that is unreachable at start-up is reported at once, as configuration.
    await prepare(pool, schema, {
      server: serverOf(connectionString),
      timeoutMs: timeout ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    });
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
    leaseClock,
    namedStatements,
    groupCommit,
    ...(retry ? { reconnect: retry } : {}),
  });
}

// Connection and migration failures are configuration problems: say which schema, on which server, and why.
async function prepare(
  db: PgQueryable,
  schema: string,
  opened?: { server: string; timeoutMs: number },
): Promise<void> {
  try {
    await migrate(db, schema);
  } catch (error) {
    if (error instanceof ReadbackError) throw error;
    const message = messageOf(error);
    if (opened === undefined) {
      throw new ReadbackError('invalid_options', `cannot prepare schema ${schema}: ${message}`);
    }
    const waited =
      isConnectionError(error) && /timeout/i.test(message)
        ? ` (no answer within ${opened.timeoutMs} ms; connectionTimeoutMillis sets how long to wait)`
        : '';
    throw new ReadbackError(
      'invalid_options',
      `cannot prepare schema ${schema} on ${opened.server}: ${message}${waited}`,
    );
  }
}

// libpq's `connect_timeout` (seconds; 0 waits forever) in the URL, which pg itself ignores, read as the CLI
// reads it; undefined when absent or not a number of seconds.
function urlTimeout(connectionString: string): number | undefined {
  const raw = urlParam(connectionString, 'connect_timeout');
  const seconds = raw === null || raw.trim() === '' ? Number.NaN : Number(raw);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds * 1000) : undefined;
}

// One query parameter of a connection string, or null when it has none.
function urlParam(connectionString: string, name: string): string | null {
  const q = connectionString.indexOf('?');
  return q === -1 ? null : new URLSearchParams(connectionString.slice(q + 1)).get(name);
}

function requireMillis(value: unknown, field: string): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 0)) {
    throw new ReadbackError('invalid_options', 'must be a whole number of milliseconds ≥ 0', field);
  }
}
