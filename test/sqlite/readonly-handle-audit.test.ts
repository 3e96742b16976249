// The store writes a record before every execute. A handle that cannot write used to be accepted at open
// (a current schema needs no write there) and to fail the first run mid-flight, with SQLite's bare "attempt to
// write a readonly database". It is refused at open, naming the field, and the file is left as it was.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBetterSqlite3 } from '../../src/sqlite/driver.js';
import type { SqliteLike } from '../../src/sqlite/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, newOp, openHandle, rejection, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('readonly-handle-audit');
afterAll(tmp.remove);

type ReadOnlyOpen = new (path: string, options: { readonly: true }) => SqliteLike & { readonly: boolean };

async function openReadOnly(path: string): Promise<SqliteLike & { readonly: boolean }> {
  const Database = (await loadBetterSqlite3()) as unknown as ReadOnlyOpen;
  return new Database(path, { readonly: true });
}

/** A readback store with one record, and the writable connection that keeps its -wal and -shm files in use. */
async function currentStore(): Promise<{ path: string; writer: SqliteLike }> {
  const path = join(tmp.fresh(), 'ops.db');
  const writer = await openHandle(path);
  const store = await sqliteStore({ database: writer });
  await store.reserve(newOp(1), ev('reserved'));
  await store.close();
  return { path, writer };
}

/** The bytes of the database and its -wal file, to show nothing was written. */
function files(path: string): Buffer[] {
  return [path, `${path}-wal`].filter(existsSync).map((file) => readFileSync(file));
}

// Node 20 has no node:sqlite: this stands in for a DatabaseSync, which has no `readonly` flag, over a real
// better-sqlite3 handle.
function withoutFlag(real: SqliteLike): SqliteLike {
  return {
    prepare: (sql) => real.prepare(sql),
    exec: (sql) => real.exec(sql),
    close: () => real.close(),
    get isTransaction() {
      return real.inTransaction === true;
    },
  };
}

describe('a { database } handle that cannot write', () => {
  it('is refused at open when better-sqlite3 opened it read-only, on a current store and on a new file', async () => {
    const { path, writer } = await currentStore();
    const before = files(path);
    const readOnly = await openReadOnly(path);
    const error = await rejection(sqliteStore({ database: readOnly }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'database' });
    expect(error.message).toBe(
      "database: the handle is open read-only ({ readonly: true }); the store writes each run's record before executing it, so it needs a writable handle",
    );
    expect(files(path)).toEqual(before);
    readOnly.close();

    // A plain SQLite file the store would have migrated: refused the same way, without a table added.
    const plain = join(tmp.fresh(), 'plain.db');
    const other = await openHandle(plain);
    other.exec('CREATE TABLE notes (body TEXT)');
    other.close();
    const plainBefore = files(plain);
    const onPlain = await openReadOnly(plain);
    expect(await rejection(sqliteStore({ database: onPlain }))).toMatchObject({
      code: 'invalid_options',
      field: 'database',
      message: expect.stringContaining('needs a writable handle'),
    });
    onPlain.close();
    expect(files(plain)).toEqual(plainBefore);

    // The writable connection still opens the store, and its record is there.
    const store = await sqliteStore({ database: writer });
    expect((await store.get('op-1'))?.id).toBe('op-1');
    await store.close();
    writer.close();
  });

  it('is found by a write that changes nothing when the handle has no read-only flag (node:sqlite)', async () => {
    const { path, writer } = await currentStore();
    const before = files(path);
    const error = await rejection(sqliteStore({ database: withoutFlag(await openReadOnly(path)) }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'database' });
    expect(error.message).toContain('cannot be written through this connection (attempt to write a readonly');
    expect(error.message).toContain('needs a writable handle');
    expect(files(path)).toEqual(before);

    // A writable one passes the probe without waiting behind another connection's write lock.
    writer.exec('BEGIN IMMEDIATE');
    const flagless = withoutFlag(await openHandle(path));
    const started = Date.now();
    const store = await sqliteStore({ database: flagless }, { busyTimeoutMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(2_000);
    writer.exec('ROLLBACK');
    // The probe ran without waiting; the connection's busy_timeout is the store's again.
    expect(flagless.prepare('PRAGMA busy_timeout').get()).toEqual({ timeout: 5_000 });
    await store.reserve(newOp(2), ev('reserved'));
    expect((await store.get('op-2'))?.id).toBe('op-2');
    await store.close();
    flagless.close();
    writer.close();
  });
});
