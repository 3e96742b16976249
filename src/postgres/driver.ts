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
 * connection across round trips: each statement is atomic in its own implicit transaction. The migration at
 * open is one query text of several statements (see `migrationSql`), run as one implicit transaction.
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

/** The pg `Pool` options readback passes when it opens a pool itself. */
export interface PgPoolConfig {
  connectionString: string;
  max?: number;
  /** How long to wait for a connection, new or free, before failing (0: forever, pg's own default). */
  connectionTimeoutMillis?: number;
  query_timeout?: number;
  /** The server cancels any statement that runs longer (ms; pg sends it at connect; 0 or absent sends none). */
  statement_timeout?: number;
  keepAlive?: boolean;
  keepAliveInitialDelayMillis?: number;
}

/**
 * How long a pool readback opens waits for a connection unless told otherwise. pg's own default is to wait
 * forever, and a host that drops packets (a firewall, a stopped VM) then holds `postgresStore()` for minutes.
 */
export const DEFAULT_CONNECTION_TIMEOUT_MS = 10_000;

/**
 * Silence on a connection readback opened before TCP keepalive probes the server (then, on Linux, every 75 s
 * up to 9 times). Without keepalive (pg's default), a server that vanishes without closing the connection (a
 * network partition, a host that died) leaves a statement waiting forever; with it the dead peer is found, the
 * statement fails as a lost connection, and the store's `reconnect` policy retries it on a fresh one.
 */
export const KEEPALIVE_DELAY_MS = 10_000;

/**
 * How long the server lets one statement of a pool readback opens run before cancelling it, unless told
 * otherwise. Readback's statements take milliseconds; without a limit, one stuck behind a lock that another
 * session holds (an operator's open transaction, a long `ALTER TABLE`) waits forever, and the run or
 * reconciler that sent it with it. Cancelled, the statement rolls back and the store call fails with the
 * server's message, which the runner reports as an honest `store_unavailable` outcome.
 */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

/** The text to install when the driver is missing. */
export const DRIVER_INSTALL = 'npm install pg@8';

type ImportModule = (specifier: string) => Promise<unknown>;

// A variable specifier keeps the root entry (and TypeScript) from ever resolving the optional peer.
const DRIVER = 'pg';
const importDriver: ImportModule = (specifier) => import(specifier);

/** Loads `pg.Pool`, turning a missing package into a `ReadbackError` that says what to do. */
export async function loadPgPool(
  importModule: ImportModule = importDriver,
): Promise<new (config: PgPoolConfig) => PgOwnedPool> {
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
  // Every pool made from here (the store's, the CLI's look at a schema) gets a connection timeout, a statement
  // timeout and TCP keepalive by default.
  const Base = Pool as new (config: PgPoolConfig) => PgOwnedPool;
  return class TimedPool extends Base {
    constructor(config: PgPoolConfig) {
      const connectionTimeoutMillis = config.connectionTimeoutMillis ?? DEFAULT_CONNECTION_TIMEOUT_MS;
      super({
        keepAlive: true,
        keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
        statement_timeout: DEFAULT_STATEMENT_TIMEOUT_MS,
        ...config,
        connectionTimeoutMillis,
      });
    }
  };
}

/**
 * The server a connection string names, for messages: host and port (or socket directory) and database,
 * never the user or password. pg's own timeout message names nothing, and a refused connection only an address.
 */
export function serverOf(connectionString: string): string {
  if (connectionString.startsWith('/')) return `the PostgreSQL socket ${connectionString.split(' ')[0]}`;
  try {
    // Without its user and password: WHATWG URL refuses `user:pw@` before an empty host, which pg accepts.
    const url = new URL(connectionString.replace(/^([a-z]+:\/\/)[^@/?#]*@/i, '$1'));
    if (url.protocol === 'socket:') return `the PostgreSQL socket ${decodeURIComponent(url.pathname)}`;
    const host = url.searchParams.get('host') ?? decodeURIComponent(url.hostname || 'localhost');
    const where = host.startsWith('/') ? host : `${host}:${url.port || '5432'}`;
    const db = decodeURIComponent(url.pathname.replace(/^\//, ''));
    return `the PostgreSQL server at ${where}${db === '' ? '' : ` (database ${db})`}`;
  } catch {
    return 'the PostgreSQL server the connection string names';
  }
}

/** True for a Postgres unique violation (SQLSTATE 23505), optionally on the named constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
