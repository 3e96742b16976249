import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { OperationStore } from '../store/types.js';
import { UsageError } from './args.js';
import { CommandError } from './format.js';

/** Where the CLI keeps operations when `--store` is not given; `readback demo` writes here. */
export const DEFAULT_STORE = '.readback/demo.db';

/** Options for `openStore`. */
export interface OpenStoreOptions {
  /** Create the database file when it does not exist (default false: a typo must not yield an empty store). */
  create?: boolean;
}

interface SqliteModule {
  sqliteStore(options: { path: string }): OperationStore | Promise<OperationStore>;
}

// A variable specifier: the SQLite store (and better-sqlite3 behind it) loads only when a command needs it,
// so `readback demo` and `readback --help` work without the optional dependency.
const SQLITE_MODULE = '../sqlite/index.js';

/**
 * Opens the store a `--store` value names: a file path is a SQLite database; `postgres://…` is refused
 * until the Postgres store exists. A missing file is a usage error unless `create` is set.
 */
export async function openStore(spec: string, options: OpenStoreOptions = {}): Promise<OperationStore> {
  if (spec.trim() === '') throw new UsageError("option '--store' needs a path");
  if (/^postgres(ql)?:\/\//i.test(spec)) {
    throw new UsageError(
      'PostgreSQL store is not available yet (issue 4); pass a SQLite file path to --store',
    );
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    throw new UsageError(`unsupported store '${spec}'; pass a SQLite file path to --store`);
  }
  const path = resolve(spec);
  if (!options.create) {
    if (!existsSync(path)) {
      throw new UsageError(
        `no store at ${spec} (file not found); run 'readback demo' first or pass --store <path>`,
      );
    }
    if (!statSync(path).isFile()) throw new UsageError(`store ${spec} is not a file`);
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

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
