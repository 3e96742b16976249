import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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
    throw new ReadbackError('invalid_options', `cannot open ${path}: ${messageOf(error)}`, 'path');
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
