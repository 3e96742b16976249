import { ReadbackError } from '../errors.js';
import { messageOf, type SqliteLike } from './driver.js';
import { BEGIN, COMMIT, ROLLBACK } from './sql.js';

/** One step of the database schema; applied once, in order, inside a write transaction. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * The step only adds an index: a file without it reads the same, so a connection that cannot write (the CLI's
   * read-only commands, run by a user who may only read the file) opens it without the step.
   */
  indexOnly?: boolean;
}

/**
 * The schema, oldest first. Never edit a released step: databases in the field have run it and the
 * frozen fixtures in test/fixtures/sqlite hold its output; add a new step instead.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'operations and events',
    sql: `
      -- JSON columns hold JSON text (NULL stands for JSON null); times are integer milliseconds.
      CREATE TABLE readback_operations (
        id TEXT PRIMARY KEY,
        schema_version INTEGER NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        scope TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        run_id TEXT NOT NULL,
        actor TEXT,
        input TEXT,
        attempt INTEGER NOT NULL,
        lifecycle TEXT NOT NULL,
        status TEXT,
        requested_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        executed_at INTEGER,
        in_flight_until INTEGER,
        accepted_at INTEGER,
        last_observed_at INTEGER,
        next_poll_at INTEGER,
        reads INTEGER NOT NULL,
        provider_ref TEXT,
        baseline TEXT,
        completion TEXT,
        lease_owner TEXT,
        lease_token TEXT,
        lease_expires_at INTEGER
      );
      -- The idempotency index is what makes reserve exactly-once across connections and restarts.
      CREATE UNIQUE INDEX readback_operations_idempotency_key ON readback_operations (idempotency_key);
      CREATE INDEX readback_operations_status ON readback_operations (status);
      -- claimDue and list({ dueBefore }) walk open lifecycles in next_poll_at order.
      CREATE INDEX readback_operations_due ON readback_operations (lifecycle, next_poll_at);
      CREATE INDEX readback_operations_action ON readback_operations (action);
      CREATE INDEX readback_operations_run_id ON readback_operations (run_id);
      -- No FOREIGN KEY: enforcement is a per-connection pragma we do not own on a caller's handle;
      -- the store only appends events inside the transaction that found their operation.
      CREATE TABLE readback_events (
        operation_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        schema_version INTEGER NOT NULL,
        at INTEGER NOT NULL,
        type TEXT NOT NULL,
        from_lifecycle TEXT,
        to_lifecycle TEXT,
        status TEXT,
        actor TEXT,
        attempt INTEGER NOT NULL,
        detail TEXT,
        PRIMARY KEY (operation_id, seq)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: 'due operations by action',
    indexOnly: true,
    sql: `
      -- A reconciler claims the due operations of its own actions: one ordered walk per action and lifecycle,
      -- so operations of other services sharing the file are never read past.
      CREATE INDEX readback_operations_due_by_action ON readback_operations (action, lifecycle, next_poll_at);
    `,
  },
  {
    version: 3,
    name: 'one index led by action',
    indexOnly: true,
    sql: `
      -- readback_operations_due_by_action serves every lookup by action: this one only cost every reserve a page.
      DROP INDEX readback_operations_action;
    `,
  },
];

/** The database schema version this code writes; a file with a newer one is refused rather than misread. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/** How commits reach the disk: see `SqliteStoreOptions.durability`. */
export type Durability = 'full' | 'normal';

// The version lives in a table of our own, not PRAGMA user_version: a caller's database may be
// shared with an application that already uses user_version for its own schema.
const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS readback_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at INTEGER NOT NULL
)`;
const HAS_MIGRATIONS_TABLE = `SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'readback_migrations'`;
const CURRENT_VERSION = 'SELECT COALESCE(MAX(version), 0) AS version FROM readback_migrations';
const RECORD_MIGRATION = 'INSERT INTO readback_migrations (version, name, applied_at) VALUES (?, ?, ?)';

/**
 * Checks the handle holds a usable database, applies the connection pragmas and brings the schema
 * up to date; throws a `ReadbackError` for a file that is not a database or is from a newer readback.
 */
export function prepareDatabase(
  db: SqliteLike,
  options: { durability: Durability; busyTimeoutMs: number; field: string; what: string },
): void {
  // Said before any statement: the store writes a record before every execute, so a read-only handle would
  // open fine and fail the first run, mid-flight, with SQLite's bare "attempt to write a readonly database".
  if (db.readonly === true) throw notWritable('is open read-only ({ readonly: true })', options);

  // Waiting for a lock is set first so every later step, including the read probe, honours it.
  db.exec(`PRAGMA busy_timeout = ${options.busyTimeoutMs}`);

  // A read before any write: a file that is not a database fails here, before a pragma or a
  // migration could touch it, so garbage handed to us is reported and left byte-for-byte alone.
  let version: number;
  try {
    version = readVersion(db);
  } catch (error) {
    // A lock held past busy_timeout (another process in an exclusive transaction) says nothing about the file.
    const reason = isBusy(error)
      ? `is locked by another connection past busyTimeoutMs (${options.busyTimeoutMs} ms): ${messageOf(error)}`
      : isReadOnly(error)
        ? `cannot be read here (${messageOf(error)}): SQLite needs to create its -wal and -shm files beside it, so this user must be able to write to its directory`
        : `is not a usable SQLite database (${messageOf(error)}); readback will not overwrite it`;
    throw new ReadbackError('invalid_options', `${options.what} ${reason}`, options.field);
  }
  refuseNewer(version, options);
  // A current schema needs no write at open, so a handle that cannot say whether it writes (node:sqlite) is
  // tried with one; a migration is that try for an older schema. Not a better-sqlite3 handle opened for
  // writing: on a file this user may only read SQLite opens it read-only, which suits the CLI's read-only
  // commands (`readback ops list`) and must keep working.
  if (version === SQLITE_SCHEMA_VERSION && typeof db.readonly !== 'boolean') probeWrite(db, options);

  try {
    // WAL lets readers run beside the single writer; FULL syncs the log at every commit.
    enableWal(db, options.busyTimeoutMs);
    db.exec(`PRAGMA synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}`);
    if (version < SQLITE_SCHEMA_VERSION) migrateUnlessOnlyIndexesAreMissing(db, version, options);
  } catch (error) {
    if (isReadOnly(error))
      throw notWritable(`cannot be written through this connection (${messageOf(error)})`, options);
    throw error;
  }
}

// For a handle without a read-only flag: a write that matches no row, rolled back, is refused with
// SQLITE_READONLY before SQLite tries any lock, and changes nothing in the file. Another connection's write
// lock makes it fail with SQLITE_BUSY instead, which a read-only handle never reaches, so the probe does not
// wait for one (busy_timeout 0 for its span).
function probeWrite(db: SqliteLike, options: { busyTimeoutMs: number; field: string; what: string }): void {
  db.exec('PRAGMA busy_timeout = 0');
  try {
    db.exec('BEGIN');
    try {
      db.prepare(PROBE_WRITE).run();
    } finally {
      // Only once BEGIN succeeded: the transaction rolled back is the probe's own.
      rollbackQuietly(db);
    }
  } catch (error) {
    if (isReadOnly(error))
      throw notWritable(`cannot be written through this connection (${messageOf(error)})`, options);
    if (!isBusy(error)) throw error;
  } finally {
    db.exec(`PRAGMA busy_timeout = ${options.busyTimeoutMs}`);
  }
}

const PROBE_WRITE = 'DELETE FROM readback_migrations WHERE 0';

function notWritable(why: string, where: { field: string; what: string }): ReadbackError {
  return new ReadbackError(
    'invalid_options',
    `${where.what} ${why}; the store writes each run's record before executing it, so it needs ${
      where.field === 'database' ? 'a writable handle' : 'a file this process can write'
    }`,
    where.field,
  );
}

// Switching a fresh file to WAL needs it to itself, and SQLite answers "database is locked" at once,
// without its busy handler, while another process holds it (several processes opening one new file).
// So the switch is retried, with short growing pauses, for as long as busy_timeout allows any wait.
function enableWal(db: SqliteLike, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
    try {
      db.exec('PRAGMA journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() + pause > deadline) throw error;
      // Opening is synchronous, so the pause blocks this thread, briefly, as busy_timeout's own waits do.
      Atomics.wait(PAUSE, 0, 0, pause);
    }
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

// better-sqlite3 sets code SQLITE_BUSY (or an extended SQLITE_BUSY_*); node:sqlite reports errcode 5 in the
// low byte.
function isBusy(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  return (
    (typeof e?.code === 'string' && e.code.startsWith('SQLITE_BUSY')) ||
    (typeof e?.errcode === 'number' && (e.errcode & 0xff) === 5) ||
    (typeof e?.message === 'string' && e.message.includes('database is locked'))
  );
}

// SQLITE_READONLY and its extended codes (better-sqlite3 names them, node:sqlite reports the number, 8 in the
// low byte): a WAL database whose -shm cannot be created, in a directory the user cannot write.
function isReadOnly(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown } | null;
  return (
    (typeof e?.code === 'string' && e.code.startsWith('SQLITE_READONLY')) ||
    (typeof e?.errcode === 'number' && (e.errcode & 0xff) === 8)
  );
}

function readVersion(db: SqliteLike): number {
  if (db.prepare(HAS_MIGRATIONS_TABLE).get() === undefined) return 0;
  return Number((db.prepare(CURRENT_VERSION).get() as { version: number | bigint }).version);
}

function refuseNewer(version: number, where: { field: string; what: string }): void {
  if (version > SQLITE_SCHEMA_VERSION) {
    throw new ReadbackError(
      'store_conflict',
      `${where.what} has readback schema v${version}, newer than this readback (v${SQLITE_SCHEMA_VERSION}); upgrade readback to open it`,
      where.field,
    );
  }
}

// A connection that cannot write opens a file that lacks only index steps as it is: it reads the same, and what
// would write through it (a run, a claim) fails on its first write as it would on a current file.
function migrateUnlessOnlyIndexesAreMissing(
  db: SqliteLike,
  version: number,
  where: { field: string; what: string },
): void {
  try {
    migrate(db, where);
  } catch (error) {
    const missing = MIGRATIONS.filter((step) => step.version > version);
    if (!isReadOnly(error) || !missing.every((step) => step.indexOnly === true)) throw error;
  }
}

// Runs the missing steps in one BEGIN IMMEDIATE transaction: it takes the write lock first, so two
// processes opening a fresh file at once serialize here, and the second re-reads the version and
// finds nothing left to do. A failing step rolls back whole, leaving the previous schema intact.
function migrate(db: SqliteLike, where: { field: string; what: string }): void {
  db.exec(BEGIN);
  try {
    db.exec(MIGRATIONS_TABLE);
    const version = readVersion(db);
    refuseNewer(version, where);
    for (const step of MIGRATIONS) {
      if (step.version <= version) continue;
      db.exec(step.sql);
      db.prepare(RECORD_MIGRATION).run(step.version, step.name, Date.now());
    }
    db.exec(COMMIT);
  } catch (error) {
    rollbackQuietly(db);
    throw error;
  }
}

/**
 * Whether text bound through this handle reaches SQLite whole past a NUL character. better-sqlite3's does;
 * node:sqlite's ends the text at the first one, so 'key\0x' would be stored, and looked up, as 'key'.
 */
export function bindsWholeText(db: SqliteLike): boolean {
  const row = db.prepare('SELECT ? AS text').get('a\0b') as { text?: unknown } | undefined;
  return row?.text === 'a\0b';
}

/** Rolls back an open transaction, ignoring the error SQLite raises when a failure already ended it. */
export function rollbackQuietly(db: SqliteLike): void {
  try {
    db.exec(ROLLBACK);
  } catch {
    // SQLite rolls back by itself on some errors (SQLITE_FULL, SQLITE_IOERR); then there is nothing to undo.
  }
}
