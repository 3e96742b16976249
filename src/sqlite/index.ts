/** readback/sqlite: the embedded default `OperationStore`, on better-sqlite3 (or any `SqliteLike` handle). */
import { unknownField } from '../contract/fields.js';
import { ReadbackError } from '../errors.js';
import type { OperationStore } from '../store/types.js';
import {
  isClosedHandle,
  messageOf,
  openDatabaseFile,
  type SqliteLike,
  startsAtHome,
  storePathProblem,
} from './driver.js';
import { type Durability, prepareDatabase } from './schema.js';
import { createSqliteStore } from './store.js';

export type { SqliteLike, SqliteStatement, SqliteValue } from './driver.js';
export { type Durability, SQLITE_SCHEMA_VERSION } from './schema.js';

/** Where the store lives: a file readback opens and closes, or an open handle the caller keeps. */
export type SqliteStoreSource = { path: string } | { database: SqliteLike };

/** Tuning for `sqliteStore`; every field has a safe default. */
export interface SqliteStoreOptions {
  /**
   * How far a commit reaches before `reserve`/`transition` resolve. `'full'` (the default) syncs
   * the write-ahead log at every commit (`synchronous=FULL`): a record that resolved survives a
   * power loss or OS crash. `'normal'` (`synchronous=NORMAL`) skips that sync and is several times
   * faster on a slow disk; it still survives the process crashing, but an OS crash or power loss
   * can roll back the last commits — and a record that vanishes that way may belong to an action
   * whose effect already ran, leaving an effect with no record, which is what readback exists to
   * prevent. Choose `'normal'` only where that loss is acceptable (tests, demos, scratch runs).
   */
  durability?: Durability;
  /** How long a write waits for another connection's lock before failing with SQLITE_BUSY (default 5000 ms). */
  busyTimeoutMs?: number;
  /**
   * Group commit (default `true`): writes called concurrently (`reserve`, `transition`, `claimDue`,
   * with their event entries) are queued and committed together on the next macrotask, in one
   * `BEGIN IMMEDIATE … COMMIT` — one fsync under `'full'` for the whole batch. A batch in which a write
   * fails is rolled back and run again with a savepoint per write, so that write rejects alone. Every
   * promise settles only after the COMMIT, so nothing is acknowledged before it is durable, and results
   * are exactly those of running the writes one after another in call order.
   *
   * The trade: a write waits for one event-loop turn (`setImmediate`) before it runs, and a write
   * that arrives with many others waits for the whole batch's SQL and its single sync. Under
   * concurrency each pays up to one batch's commit time, while the store does many times more durable
   * writes per second (see BENCHMARKS.md). A lone writer does not wait: when the last transaction held
   * a single write, for the same operation or for one it ended, the next commits inside the call, so
   * one action at a time costs what `false` costs. `false` commits each write inside the call, one
   * transaction (and one sync) per write.
   */
  groupCommit?: boolean;
}

/** The options after validation, with defaults filled in. */
export interface ResolvedSqliteStoreOptions {
  durability: Durability;
  busyTimeoutMs: number;
  groupCommit: boolean;
}

const MAX_BUSY_TIMEOUT_MS = 2 ** 31 - 1;
const OPTION_KEYS = ['durability', 'busyTimeoutMs', 'groupCommit'];

/** Validates `sqliteStore` options once and fills in the defaults. */
export function resolveSqliteOptions(options: SqliteStoreOptions = {}): ResolvedSqliteStoreOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'must be an object', 'options');
  }
  // A misspelt option (`busyTimeout`, `durable`) would be dropped in silence and its default applied instead.
  const unknown = unknownField(options, OPTION_KEYS);
  if (unknown) {
    throw new ReadbackError(
      'invalid_options',
      `is not an option (expected ${OPTION_KEYS.join(', ')})${unknown.hint}`,
      unknown.key,
    );
  }
  const durability = options.durability ?? 'full';
  if (durability !== 'full' && durability !== 'normal') {
    throw new ReadbackError('invalid_options', `must be 'full' or 'normal'`, 'durability');
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
  // SQLite keeps busy_timeout in a 32-bit int: a larger value is stored as 0, which means "never wait".
  if (
    typeof busyTimeoutMs !== 'number' ||
    !Number.isInteger(busyTimeoutMs) ||
    busyTimeoutMs < 0 ||
    busyTimeoutMs > MAX_BUSY_TIMEOUT_MS
  ) {
    throw new ReadbackError(
      'invalid_options',
      `must be a whole number of milliseconds from 0 to ${MAX_BUSY_TIMEOUT_MS}`,
      'busyTimeoutMs',
    );
  }
  const groupCommit = options.groupCommit ?? true;
  if (typeof groupCommit !== 'boolean') {
    throw new ReadbackError('invalid_options', 'must be true or false', 'groupCommit');
  }
  return { durability, busyTimeoutMs, groupCommit };
}

/**
 * Opens the SQLite operation store. With `{ path }` (a plain file path, relative to the working directory at open;
 * a leading `~`, a `file:` URI, a URL, a directory-looking path and a database's `-wal`/`-shm`/`-journal`
 * file are refused) it loads
 * better-sqlite3, creates the file and its directory if missing, and closes the connection on `close()`; with `{ database }` it uses the
 * caller's open handle and never closes it. Either way it sets WAL, `synchronous` and
 * `busy_timeout` on the connection and brings the schema up to date.
 */
export async function sqliteStore(
  source: SqliteStoreSource,
  options?: SqliteStoreOptions,
): Promise<OperationStore> {
  const resolved = resolveSqliteOptions(options);
  if (typeof source !== 'object' || source === null) {
    throw new ReadbackError('invalid_options', 'pass { path } or { database }', 'source');
  }
  // `sqliteStore({ path, durability: 'normal' })` reads naturally but would be ignored: the options are the
  // second argument.
  const misplaced = OPTION_KEYS.find((key) => key in source);
  if (misplaced) {
    throw new ReadbackError(
      'invalid_options',
      `is an option, not part of the source: pass it second, sqliteStore({ path }, { ${misplaced} })`,
      misplaced,
    );
  }
  if ('database' in source && 'path' in source) {
    throw new ReadbackError('invalid_options', 'pass { path } or { database }, not both', 'source');
  }

  if ('database' in source) {
    const db = source.database;
    if (typeof db?.prepare !== 'function' || typeof db.exec !== 'function') {
      throw new ReadbackError('invalid_options', 'must be an open SQLite database handle', 'database');
    }
    if (isClosedHandle(db)) throw new ReadbackError('invalid_options', CLOSED_AT_OPEN, 'database');
    try {
      // Inside the try: node:sqlite's isTransaction getter itself throws on a closed handle.
      if (db.inTransaction === true || db.isTransaction === true) {
        throw new ReadbackError(
          'invalid_options',
          'is inside a transaction; open the store outside it so its schema and records commit on their own',
          'database',
        );
      }
      prepareDatabase(db, { ...resolved, field: 'database', what: 'the handle' });
    } catch (error) {
      if (isClosedHandle(db, error)) throw new ReadbackError('invalid_options', CLOSED_AT_OPEN, 'database');
      throw asReadbackError(error, 'the handle', 'database');
    }
    const store = createSqliteStore({
      db,
      owned: false,
      label: 'sqlite store',
      groupCommit: resolved.groupCommit,
    });
    return reportCallerClose(store, db);
  }

  const { path } = source as { path?: unknown };
  if (typeof path !== 'string') {
    throw new ReadbackError('invalid_options', 'must be a file path string', 'path');
  }
  // SQLite opens '' as a temporary database deleted on close: every record would be lost in silence.
  if (path === '') {
    throw new ReadbackError(
      'invalid_options',
      "must be a file path (or ':memory:' for a throwaway store)",
      'path',
    );
  }
  // SQLite takes the path as a C string: it would open (or create) the file named by the part before the NUL.
  if (path.includes('\0')) {
    throw new ReadbackError('invalid_options', 'must not contain a NUL character', 'path');
  }
  // Only a shell expands '~': taken literally it would put the store in a directory named '~' under the
  // working directory, a different (empty) store for every directory the program starts in.
  if (startsAtHome(path)) {
    throw new ReadbackError(
      'invalid_options',
      `starts with '~', which only a shell expands; pass the full path, e.g. join(os.homedir(), ${JSON.stringify(path.slice(2))})`,
      'path',
    );
  }
  const problem = storePathProblem(path);
  if (problem) throw new ReadbackError('invalid_options', `${JSON.stringify(path)} ${problem}`, 'path');
  const db = await openDatabaseFile(path);
  try {
    prepareDatabase(db, { ...resolved, field: 'path', what: path });
  } catch (error) {
    // We opened it, so we close it: a refused file must not stay locked by a handle nobody holds.
    try {
      db.close();
    } catch {
      // Closing a handle whose open failed can itself fail; the first error is the one to report.
    }
    throw asReadbackError(error, path, 'path');
  }
  return createSqliteStore({
    db,
    owned: true,
    label: `sqlite store at ${path}`,
    groupCommit: resolved.groupCommit,
  });
}

const CLOSED_AT_OPEN = 'is closed; pass an open handle, and close it only after the store';

// The caller owns a `{ database }` handle and may close it while the store still uses it; the driver then
// throws its own TypeError or state error, which says nothing about readback. Report it as the store being
// closed, which is what it amounts to. Only caller-owned handles are wrapped (one `catch` per call), and only
// errors change.
function reportCallerClose(store: OperationStore, db: SqliteLike): OperationStore {
  const guarded = { ...store };
  for (const [name, method] of Object.entries(store) as [keyof OperationStore, unknown][]) {
    if (typeof method !== 'function' || name === 'close') continue;
    const wrapped = (...args: unknown[]) =>
      (method as (...a: unknown[]) => Promise<unknown>).apply(store, args).catch((error: unknown) => {
        if (error instanceof ReadbackError || !isClosedHandle(db, error)) throw error;
        throw new ReadbackError(
          'store_closed',
          `sqlite store: its database handle was closed by its owner; cannot ${name} (close the store before the handle)`,
        );
      });
    Object.assign(guarded, { [name]: wrapped });
  }
  return guarded;
}

// Pragmas and migrations fail for reasons outside our control (read-only file, full disk, locked
// past busy_timeout); opening is configuration, so say which database and why.
function asReadbackError(error: unknown, what: string, field: string): ReadbackError {
  if (error instanceof ReadbackError) return error;
  return new ReadbackError('invalid_options', `cannot prepare ${what}: ${messageOf(error)}`, field);
}
