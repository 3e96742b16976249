import { existsSync, lstatSync, mkdirSync, readlinkSync, statSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { ReadbackError } from '../errors.js';

/** A value SQLite can bind or return; readback binds only numbers, strings and null. */
export type SqliteValue = number | bigint | string | null | Uint8Array;

/** The prepared-statement surface readback uses; better-sqlite3's `Statement` and node:sqlite's `StatementSync` both fit. */
export interface SqliteStatement {
  // `unknown[]`, not `SqliteValue[]`: @types/better-sqlite3 infers a statement's parameters as `[{}]`
  // when its generic `prepare` meets a plain signature, and only `unknown` is comparable with that.
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** better-sqlite3: return rows as arrays of values (only on statements that return rows). */
  raw?(toggle?: boolean): unknown;
  /** node:sqlite (Node 24+): the same. */
  setReturnArrays?(enabled: boolean): void;
}

/** A prepared statement whose rows come back as arrays of their values, in the statement's column order. */
export interface SqliteArrayStatement {
  get(...params: unknown[]): unknown[] | undefined;
  all(...params: unknown[]): unknown[][];
}

/**
 * Prepares `sql`, which returns `columns`, to hand back each row as an array of its values. Drivers that can
 * (better-sqlite3's raw mode, node:sqlite's `setReturnArrays`) then build no object per row: for a 27-column
 * operation row that object cost more than the statement's own work. Other handles' rows are converted.
 */
export function prepareArrays(db: SqliteLike, sql: string, columns: readonly string[]): SqliteArrayStatement {
  const statement = db.prepare(sql);
  if (typeof statement.raw === 'function') {
    statement.raw(true);
    return statement as SqliteArrayStatement;
  }
  if (typeof statement.setReturnArrays === 'function') {
    statement.setReturnArrays(true);
    return statement as SqliteArrayStatement;
  }
  const values = (row: unknown) => columns.map((column) => (row as Record<string, unknown>)[column]);
  return {
    get: (...params) => {
      const row = statement.get(...params);
      return row === undefined ? undefined : values(row);
    },
    all: (...params) => statement.all(...params).map(values),
  };
}

/**
 * The database surface readback uses, typed structurally so that a better-sqlite3 `Database` and a
 * node:sqlite `DatabaseSync` (Node 22+) both fit without readback importing either driver's types.
 */
export interface SqliteLike {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  close(): unknown;
  /** better-sqlite3's name for "a transaction is open on this connection". */
  readonly inTransaction?: boolean;
  /** node:sqlite's name for the same. */
  readonly isTransaction?: boolean;
  /** better-sqlite3's "the connection is open"; false once the caller closed it. */
  readonly open?: boolean;
  /** node:sqlite's name for the same (Node 22.15+). */
  readonly isOpen?: boolean;
  /** better-sqlite3's "opened with `{ readonly: true }`"; node:sqlite has no such property. */
  readonly readonly?: boolean;
}

/**
 * Whether the caller's handle is closed: by its own flag when the driver has one, else by the error a
 * closed handle raises (node:sqlite before `isOpen` says "database is not open", and a statement of a
 * closed database "statement has been finalized"; better-sqlite3 "The database connection is not open").
 */
export function isClosedHandle(db: SqliteLike, error?: unknown): boolean {
  if (db.open === false || db.isOpen === false) return true;
  if (error === undefined || db.open === true || db.isOpen === true) return false;
  const message = messageOf(error);
  return /database (connection )?is not open|statement has been finalized/i.test(message);
}

/** The text to install when the driver is missing; v13 needs Node 22, so the range stays on v12. */
export const DRIVER_INSTALL = 'npm install better-sqlite3@12';

type ImportModule = (specifier: string) => Promise<unknown>;

// A variable specifier keeps TypeScript from demanding better-sqlite3's types (it ships none, and
// readback declares no @types dependency), and keeps the root entry from ever resolving the driver.
const DRIVER = 'better-sqlite3';
const importDriver: ImportModule = (specifier) => import(specifier);

/** Loads better-sqlite3's constructor, turning a missing or unloadable package into a `ReadbackError` that says what to do. */
export async function loadBetterSqlite3(
  importModule: ImportModule = importDriver,
): Promise<new (path: string) => SqliteLike> {
  let loaded: unknown;
  try {
    loaded = await importModule(DRIVER);
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    if (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND') {
      throw new ReadbackError(
        'invalid_options',
        `readback/sqlite with { path } needs the optional peer dependency better-sqlite3; run \`${DRIVER_INSTALL}\`, or pass an open database as { database }`,
      );
    }
    // The package is there but its native addon is not (built for another Node, or never built).
    throw new ReadbackError(
      'invalid_options',
      `better-sqlite3 is installed but failed to load (${String(e.message ?? error)}); run \`npm rebuild better-sqlite3\` (it compiles with node-gyp when no prebuilt binary can be downloaded)`,
    );
  }
  const ctor = (loaded as { default?: unknown }).default ?? loaded;
  if (typeof ctor !== 'function') {
    throw new ReadbackError('invalid_options', `better-sqlite3 did not export a Database constructor`);
  }
  return ctor as new (
    path: string,
  ) => SqliteLike;
}

/** Whether a path starts with the `~` a shell would expand (`~` alone, `~/…`); readback itself is no shell. */
export function startsAtHome(path: string): boolean {
  return /^~(?:[/\\]|$)/.test(path);
}

/** True for the paths SQLite treats as a private in-memory database, which have no directory to create. */
export function isMemoryPath(path: string): boolean {
  return path === ':memory:' || path === '';
}

// The files SQLite keeps beside a database `x`: `x-wal`, `x-shm`, `x-journal`.
const SIDE_FILES: Record<string, string> = {
  wal: 'write-ahead log',
  shm: 'shared-memory index',
  journal: 'rollback journal',
};

/**
 * Why `path` cannot name a store file, as a phrase to follow the path ("ends with '/' …"), or undefined
 * when it can. Each case is one SQLite would open without complaint, as a file other than the one meant.
 */
export function storePathProblem(path: string): string | undefined {
  if (path.trim() === '') return "is empty; pass a file path (or ':memory:' for a throwaway store)";
  // A line break or tab pasted with the path, or read from a file or env var with its newline, names another file.
  const control = [...path].map((c) => c.charCodeAt(0)).find((c) => c < 0x20 || c === 0x7f);
  if (control !== undefined) {
    const code = control.toString(16).padStart(4, '0').toUpperCase();
    return `contains a control character (U+${code}); a line break or tab copied with the path?`;
  }
  if (path.trim() !== path) {
    return 'begins or ends with whitespace, which would name another file than the one meant; trim it';
  }
  // better-sqlite3 does not interpret URIs: 'file:/tmp/x.db' would become the relative directory 'file:'.
  if (/^file:/i.test(path)) {
    return "is a file: URI, which readback does not interpret (SQLite would take it as a file named 'file:…'); pass the plain path, e.g. fileURLToPath(url), without query parameters such as ?mode=ro";
  }
  // 'postgres:/db' (one slash) and the like are mistyped URLs; Windows drives ('C:') are one letter.
  const scheme = /^([a-z][a-z0-9+.-]+):(\/?)/i.exec(path);
  if (scheme && (scheme[2] === '/' || /^(postgres(ql)?|pg|sqlite3?|mysql|https?)$/i.test(scheme[1]!))) {
    const postgres = /^postgres(ql)?$|^pg$/i.test(scheme[1]!);
    return postgres
      ? 'looks like a PostgreSQL URL, not a file path; a Postgres store is named by a postgres://… URL'
      : `looks like a ${scheme[1]}: URL, not a file path; pass the database file's path`;
  }
  // SQLite would drop the slash and create a file where a directory was meant ('runs/' became a file 'runs').
  const last = path.split(sep === '\\' ? /[\\/]/ : '/').at(-1);
  if (last === '' || last === '.' || last === '..') {
    return `names a directory; pass the database file's path inside it, e.g. ${JSON.stringify(resolve(path, 'ops.db'))}`;
  }
  // Opened as a database, an empty -wal would be written into while the real database still uses it.
  const side = /-(wal|shm|journal)$/.exec(path);
  if (side && existsSync(path.slice(0, -side[0].length))) {
    const main = path.slice(0, -side[0].length);
    return `is the ${SIDE_FILES[side[1]!]} of the SQLite database ${JSON.stringify(main)}, not a database; pass ${JSON.stringify(main)}`;
  }
  return undefined;
}

/** Opens (creating its parent directory) the database file at `path` with better-sqlite3; the caller owns the handle. */
export async function openDatabaseFile(
  path: string,
  importModule: ImportModule = importDriver,
): Promise<SqliteLike> {
  const Database = await loadBetterSqlite3(importModule);
  if (!isMemoryPath(path)) {
    try {
      ensureDirectory(dirname(resolve(path)));
    } catch (error) {
      throw new ReadbackError(
        'invalid_options',
        `cannot create the directory for ${path}: ${messageOf(error)}`,
        'path',
      );
    }
  }
  // SQLite says only "unable to open database file" for a directory; say what is wrong.
  if (!isMemoryPath(path) && existsSync(path) && statSync(path).isDirectory()) {
    throw new ReadbackError('invalid_options', `${path} is a directory, not a database file`, 'path');
  }
  try {
    return new Database(path);
  } catch (error) {
    throw new ReadbackError(
      'invalid_options',
      `cannot open ${path}: ${messageOf(error)}${danglingLink(path)}`,
      'path',
    );
  }
}

// SQLite follows a symbolic link and creates the file it points to, so one into a missing directory fails
// with "unable to open database file"; say where it points.
function danglingLink(path: string): string {
  try {
    if (!lstatSync(path).isSymbolicLink() || existsSync(path)) return '';
    return ` (it is a symbolic link to ${readlinkSync(path)}, whose directory does not exist)`;
  } catch {
    return '';
  }
}

/**
 * Creates `dir` and any missing parents. Not `mkdirSync(dir, { recursive: true })`: on Node 20 that
 * spins forever for a path it can never create, such as one under /proc, instead of failing.
 */
export function ensureDirectory(dir: string): void {
  const missing: string[] = [];
  for (let current = dir; !existsSync(current); current = dirname(current)) {
    missing.push(current);
    if (dirname(current) === current) break;
  }
  for (const next of missing.reverse()) {
    try {
      mkdirSync(next);
    } catch (error) {
      // Another process opening the same store may have created it a moment ago; that is fine.
      if ((error as { code?: unknown }).code !== 'EEXIST' || !statSync(next).isDirectory()) throw error;
    }
  }
}

/** The message of an unknown thrown value, for wrapping driver errors in readable ones. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
