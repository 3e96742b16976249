import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { PgOwnedPool } from '../postgres/driver.js';
import { type SqliteLike, startsAtHome, storePathProblem } from '../sqlite/driver.js';
import type { OperationStore } from '../store/types.js';
import { UsageError } from './args.js';
import { CommandError } from './format.js';

/** Where the CLI keeps operations when `--store` is not given; `readback demo` writes here. */
export const DEFAULT_STORE = '.readback/demo.db';

/** Options for `openStore`. */
export interface OpenStoreOptions {
  /**
   * Create the database file when it does not exist, or migrate an empty one (default false: a typo must not
   * yield an empty store); an existing database without readback's tables is refused either way.
   */
  create?: boolean;
  /** Options passed on to `postgresStore` for a `postgres://` store (lease clock, reconnect); ignored for SQLite. */
  postgres?: PostgresOpenOptions;
}

/** The `postgresStore` options the CLI can set from flags (see `PostgresStoreOptions`). */
export interface PostgresOpenOptions {
  leaseClock?: 'database' | 'caller';
  reconnect?: { retries?: number; baseMs?: number; maxMs?: number } | false;
}

interface SqliteModule {
  sqliteStore(options: { path: string }): OperationStore | Promise<OperationStore>;
}

interface PostgresModule {
  DEFAULT_SCHEMA: string;
  postgresStore(
    options: { connectionString: string; schema?: string } & PostgresOpenOptions,
  ): Promise<OperationStore>;
}

// A variable specifier: the SQLite store (and better-sqlite3 behind it) loads only when a command needs it,
// so `readback demo` and `readback --help` work without the optional dependency.
const SQLITE_MODULE = '../sqlite/index.js';
// The driver loader alone, for the read-only look at an existing file (see requireReadbackTables).
const SQLITE_DRIVER_MODULE = '../sqlite/driver.js';
// Every readback SQLite store has this table from its first migration on.
const HAS_READBACK_TABLES =
  "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'readback_migrations'";
// Likewise the Postgres store (and pg behind it) loads only for a `postgres://` store.
const POSTGRES_MODULE = '../postgres/index.js';
// pg's Pool alone, for the look at the schema before the store opens (see requireReadbackSchema).
const POSTGRES_DRIVER_MODULE = '../postgres/driver.js';
// Whether the schema exists, and whether it holds the migrations table every readback schema has from its
// first migration on. pg_namespace and to_regclass answer without creating or locking anything.
const HAS_READBACK_SCHEMA = `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema,
  to_regclass(format('%I.migrations', $1::text)) IS NOT NULL AS tables`;

// The rule the Postgres store itself enforces (src/postgres/schema.ts), checked here so a bad
// `?schema=` is a usage error before any connection is made.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** A `postgres://` store spec split into the URL pg gets and the schema readback uses. */
export interface PostgresSpec {
  /** The URL without readback's own `schema` parameter; every other parameter is passed on to pg. */
  connectionString: string;
  /** From `?schema=name`; undefined means the store's default (`readback`). */
  schema: string | undefined;
}

/**
 * Splits `postgres://…[?schema=name]`: `schema` is readback's parameter (pg would not know it), so it
 * is taken out; the rest of the URL is passed on as written.
 */
export function parsePostgresSpec(spec: string): PostgresSpec {
  const hash = spec.indexOf('#');
  const beforeHash = hash === -1 ? spec : spec.slice(0, hash);
  const q = beforeHash.indexOf('?');
  if (q === -1) return { connectionString: spec, schema: undefined };
  const params = new URLSearchParams(beforeHash.slice(q + 1));
  const schemas = params.getAll('schema');
  if (schemas.length === 0) return { connectionString: spec, schema: undefined };
  if (schemas.length > 1) throw new UsageError(`store URL ${redact(spec)} names more than one schema`);
  const schema = schemas[0]!;
  if (!SCHEMA_NAME.test(schema)) {
    throw new UsageError(
      `store URL ${redact(spec)}: schema '${schema}' must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters)`,
    );
  }
  params.delete('schema');
  const rest = params.toString();
  return {
    connectionString: `${beforeHash.slice(0, q)}${rest === '' ? '' : `?${rest}`}${hash === -1 ? '' : spec.slice(hash)}`,
    schema,
  };
}

/** The spec with any password replaced by `***`, for messages. */
export function redact(spec: string): string {
  return spec.replace(/^(postgres(?:ql)?:\/\/[^:@/?#]*):[^@/?#]*@/i, '$1:***@');
}

/**
 * Opens the store a `--store` value names: a file path is a SQLite database, a `postgres://…` or
 * `postgresql://…` URL a Postgres store (schema from `?schema=name`, default `readback`). Unless `create`
 * is set, a missing file or schema, or one without readback's tables, is a usage error and left as it is;
 * with `create`, a missing or empty file and a missing schema are created and migrated, but a SQLite file
 * holding another program's database is still refused. A leading `~` in a path is the home directory.
 */
export async function openStore(spec: string, options: OpenStoreOptions = {}): Promise<OperationStore> {
  if (spec.trim() === '') throw new UsageError("option '--store' needs a path");
  if (POSTGRES_URL.test(spec)) return openPostgres(spec, options.postgres ?? {}, options.create === true);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    throw new UsageError(
      `unsupported store '${redact(spec)}'; pass a SQLite file path or a postgres:// URL to --store`,
    );
  }
  // Checked as written: resolve() would drop a trailing '/' and take 'file:…' and 'postgres:/…' as file names.
  const problem = storePathProblem(expandHome(spec));
  if (problem) throw new UsageError(`store ${spec} ${problem}`);
  const path = resolve(expandHome(spec));
  if (!options.create && !existsSync(path)) {
    const where = path === resolve(spec) ? '' : ` at ${path}`;
    throw new UsageError(
      `no store at ${spec} (file not found${where}); run 'readback demo' first or pass --store <path>`,
    );
  }
  if (existsSync(path)) {
    if (!statSync(path).isFile()) throw new UsageError(`store ${spec} is not a file`);
    // Creating may start from an empty file (touched for it), never from another program's database.
    if (!options.create || statSync(path).size > 0) await requireReadbackTables(path, spec, options.create);
  }
  let mod: SqliteModule;
  try {
    mod = (await import(SQLITE_MODULE)) as SqliteModule;
  } catch (error) {
    throw new CommandError(`could not load the SQLite store: ${errorText(error)}`);
  }
  try {
    return await mod.sqliteStore({ path });
  } catch (error) {
    throw new CommandError(`could not open store ${spec}: ${errorText(error)}`);
  }
}

// The shell expands '~' only at the start of a word, so `--store=~/ops.db` arrives as written; without this it
// would name a directory called '~' under the working directory.
function expandHome(spec: string): string {
  return startsAtHome(spec) ? join(homedir(), spec.slice(1)) : spec;
}

interface SqliteDriverModule {
  loadBetterSqlite3(): Promise<new (path: string) => SqliteLike>;
}

type ReadOnlyDatabase = new (path: string, options: { readonly: true; fileMustExist: true }) => SqliteLike;

// The SQLite store adds its tables to any database it opens, which suits a program opening its own file but
// not a command pointed at an existing store: an empty file or another program's database would silently
// become an empty readback store. So a read-only look comes first; where the look itself fails (no driver,
// not a database), the store's own open reports that, and leaves the file alone.
async function requireReadbackTables(path: string, spec: string, create = false): Promise<void> {
  const hint = create
    ? 'pass a new file or an existing readback store; readback leaves this file as it is'
    : "pass the store your program or 'readback demo' wrote; readback leaves this file as it is";
  if (statSync(path).size === 0)
    throw new UsageError(`store ${spec} is an empty file, not a readback store; ${hint}`);
  let db: SqliteLike;
  try {
    const driver = (await import(SQLITE_DRIVER_MODULE)) as SqliteDriverModule;
    const Database = (await driver.loadBetterSqlite3()) as unknown as ReadOnlyDatabase;
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch {
    return;
  }
  let found: boolean;
  try {
    found = db.prepare(HAS_READBACK_TABLES).get() !== undefined;
  } catch (error) {
    // Pointing --store at a file that is no database is the same mistake as an empty file or another
    // program's database; anything else (a lock, a damaged store) the store's own open reports.
    if ((error as { code?: unknown }).code === 'SQLITE_NOTADB') {
      throw new UsageError(`store ${spec} is not a SQLite database, not a readback store; ${hint}`);
    }
    return;
  } finally {
    db.close();
  }
  if (!found) {
    throw new UsageError(
      `store ${spec} is a SQLite database without readback's tables, not a readback store; ${hint}`,
    );
  }
}

interface PostgresDriverModule {
  loadPgPool(): Promise<new (config: PgProbeConfig) => PgOwnedPool>;
}

// pg's own options (passed through its Pool): without a connection timeout pg waits forever on a host that
// accepts the TCP connection but never answers (a firewall, a wrong port, a stopped VM).
interface PgProbeConfig {
  connectionString: string;
  max?: number;
  connectionTimeoutMillis?: number;
  query_timeout?: number;
}

/** How long the CLI waits for a Postgres store to answer, unless the URL sets `connect_timeout` (seconds). */
export const PG_CONNECT_TIMEOUT_MS = 5_000;

// libpq's `connect_timeout` in the URL (seconds), which node-postgres itself ignores; honored here, as psql
// and postgresStore do.
function connectTimeoutMs(connectionString: string): number {
  const q = connectionString.indexOf('?');
  const raw = q === -1 ? null : new URLSearchParams(connectionString.slice(q + 1)).get('connect_timeout');
  const seconds = raw === null || raw.trim() === '' ? Number.NaN : Number(raw);
  // 0 waits forever, as in libpq and postgresStore: the user's explicit choice.
  return Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds * 1000) : PG_CONNECT_TIMEOUT_MS;
}

async function openPostgres(
  spec: string,
  extra: PostgresOpenOptions,
  create: boolean,
): Promise<OperationStore> {
  const { connectionString, schema } = parsePostgresSpec(spec);
  let mod: PostgresModule;
  try {
    mod = (await import(POSTGRES_MODULE)) as PostgresModule;
  } catch (error) {
    throw new CommandError(`could not load the Postgres store: ${errorText(error)}`);
  }
  if (!create) await requireReadbackSchema(spec, connectionString, schema ?? mod.DEFAULT_SCHEMA);
  try {
    return await mod.postgresStore({
      connectionString,
      ...(schema !== undefined ? { schema } : {}),
      ...extra,
    });
  } catch (error) {
    // pg's messages may quote the URL; never echo a password.
    throw new CommandError(`could not open store ${redact(spec)}: ${redactAll(errorText(error), spec)}`);
  }
}

// The Postgres store creates and migrates its schema on open, which suits a program opening its own store
// but not a command pointed at an existing one: a mistyped `?schema=` would become a new, empty schema
// (and `ops list` would answer "no operations match"). So one short-lived connection looks first.
async function requireReadbackSchema(spec: string, connectionString: string, schema: string): Promise<void> {
  let found: { schema: boolean; tables: boolean };
  const timeout = connectTimeoutMs(connectionString);
  try {
    const driver = (await import(POSTGRES_DRIVER_MODULE)) as PostgresDriverModule;
    const Pool = await driver.loadPgPool();
    const pool = new Pool({
      connectionString,
      max: 1,
      connectionTimeoutMillis: timeout,
      query_timeout: timeout,
    });
    pool.on?.('error', () => undefined);
    try {
      found = (await pool.query(HAS_READBACK_SCHEMA, [schema])).rows[0] as typeof found;
    } finally {
      await pool.end().catch(() => undefined);
    }
  } catch (error) {
    // pg's messages may quote the URL; never echo a password.
    const text = redactAll(errorText(error), spec);
    const slow = /timeout/i.test(text)
      ? ` (no answer within ${timeout / 1000} s; give a slow server longer with ?connect_timeout=SECONDS)`
      : '';
    throw new CommandError(`could not open store ${redact(spec)}: ${text}${slow}`);
  }
  const hint = "pass the ?schema= your program's store uses; readback creates nothing here";
  if (!found.schema) {
    throw new UsageError(`no store at ${redact(spec)} (schema '${schema}' not found); ${hint}`);
  }
  if (!found.tables) {
    throw new UsageError(
      `store ${redact(spec)}: schema '${schema}' has no readback tables, not a readback store; ${hint}`,
    );
  }
}

function redactAll(text: string, spec: string): string {
  const shown = redact(spec);
  return shown === spec ? text : text.split(spec).join(shown);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
