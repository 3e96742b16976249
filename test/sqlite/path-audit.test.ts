import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, inDir, newOp, openHandle, rejection, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('path-audit');
afterAll(tmp.remove);

describe('paths SQLite would open as some other file than the one meant', () => {
  // Each of these used to open: 'file:/tmp/x.db' as the relative directory 'file:' (readback created it),
  // 'file:x.db?mode=ro' as a file of that name, 'runs/' as a file named 'runs', 'postgres:/x' as a directory.
  const cases: [string, string][] = [
    ['file:/tmp/ops.db', 'is a file: URI'],
    ['file:ops.db?mode=ro', 'is a file: URI'],
    ['FILE:ops.db', 'is a file: URI'],
    ['file::memory:', 'is a file: URI'],
    ['postgres:/app@db/ops', 'looks like a PostgreSQL URL'],
    ['postgresql:ops', 'looks like a PostgreSQL URL'],
    ['sqlite:ops.db', 'looks like a sqlite: URL'],
    ['https://example.com/ops.db', 'looks like a https: URL'],
    ['runs/', 'names a directory'],
    ['runs/ops.db/', 'names a directory'],
    ['runs/.', 'names a directory'],
    ['..', 'names a directory'],
    [' ', 'is empty'],
    ['ops.db\n', 'contains a control character (U+000A)'],
    ['ops\t.db', 'contains a control character (U+0009)'],
    [' ops.db', 'begins or ends with whitespace'],
    ['ops.db ', 'begins or ends with whitespace'],
  ];
  it.each(cases)('refuses %j, naming the path, and creates nothing', async (path, reason) => {
    const dir = tmp.fresh();
    const error = await inDir(dir, () => rejection(sqliteStore({ path })));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).toContain(`path: ${JSON.stringify(path)} ${reason}`);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('says where a directory-looking path would have put the file', async () => {
    const dir = tmp.fresh();
    const error = await rejection(sqliteStore({ path: `${dir}/runs/` }));
    expect(error.message).toContain(`e.g. ${JSON.stringify(join(dir, 'runs', 'ops.db'))}`);
    expect(readdirSync(dir)).toEqual([]);
  });

  // Names that merely contain these characters are ordinary files.
  it('still opens names with a colon, a dot, a dash or spaces inside them', async () => {
    const dir = tmp.fresh();
    for (const name of ['ops:2026.db', '.ops', 'trading-journal', 'my ops.db', 'a-wal']) {
      const store = await sqliteStore({ path: join(dir, name) });
      await store.close();
      expect(statSync(join(dir, name)).isFile()).toBe(true);
    }
  });
});

describe("a live database's side files", () => {
  // After a TRUNCATE checkpoint the -wal of a database in use is empty, which SQLite opens as a new database:
  // the store used to migrate into it, writing its pages into the live database's write-ahead log.
  it('refuses the -wal, -shm and -journal of an existing database, and leaves them byte for byte', async () => {
    const dir = tmp.fresh();
    const main = join(dir, 'app.db');
    const live = await openHandle(main);
    live.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (a); INSERT INTO t VALUES ('kept')");
    live.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    expect(statSync(`${main}-wal`).size).toBe(0);
    const before = readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))] as const);
    for (const [suffix, what] of [
      ['-wal', 'write-ahead log'],
      ['-shm', 'shared-memory index'],
      ['-journal', 'rollback journal'],
    ]) {
      const error = await rejection(sqliteStore({ path: `${main}${suffix}` }));
      expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
      expect(error.message).toContain(`is the ${what} of the SQLite database ${JSON.stringify(main)}`);
    }
    for (const [f, bytes] of before) expect(readFileSync(join(dir, f)).equals(bytes)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(before.map(([f]) => f).sort());
    expect(live.prepare('SELECT a FROM t').all()).toEqual([{ a: 'kept' }]);
    live.close();
  });
});

describe('where a path leads', () => {
  // Documented: a relative path is resolved against the working directory when the store opens, and the open
  // handle keeps that file whatever the process does with its working directory afterwards.
  it('resolves a relative path against the working directory at open, and keeps that file', async () => {
    const dir = tmp.fresh();
    const elsewhere = tmp.fresh();
    const store = await inDir(dir, () => sqliteStore({ path: 'state/ops.db' }));
    await inDir(elsewhere, () => store.reserve(newOp(1), ev('reserved')));
    await store.close();
    expect(readdirSync(elsewhere)).toEqual([]);
    const check = await openHandle(join(dir, 'state', 'ops.db'));
    expect(check.prepare('SELECT id FROM readback_operations').all()).toEqual([{ id: 'op-1' }]);
    check.close();
  });

  it('follows a symbolic link to the database it points to', async () => {
    const dir = tmp.fresh();
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real', 'ops.db'), join(dir, 'link.db'));
    const store = await sqliteStore({ path: join(dir, 'link.db') });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const check = await openHandle(join(dir, 'real', 'ops.db'));
    expect(check.prepare('SELECT id FROM readback_operations').all()).toEqual([{ id: 'op-1' }]);
    check.close();
  });

  // SQLite said only "unable to open database file" for a link into a directory that does not exist.
  it('says where a dangling symbolic link points', async () => {
    const dir = tmp.fresh();
    const target = join(dir, 'gone', 'ops.db');
    symlinkSync(target, join(dir, 'link.db'));
    const error = await rejection(sqliteStore({ path: join(dir, 'link.db') }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).toContain(`it is a symbolic link to ${target}, whose directory does not exist`);
    expect(existsSync(join(dir, 'gone'))).toBe(false);
  });
});
