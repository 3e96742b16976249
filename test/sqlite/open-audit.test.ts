import { execFile, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { SQLITE_SCHEMA_VERSION, sqliteStore } from '../../src/sqlite/index.js';
import { compileSqliteStore } from '../fixtures/sqlite/compile.mjs';
import { ev, newOp, openHandle, rejection, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('open-audit');
afterAll(tmp.remove);
const freshDir = tmp.fresh;

describe('paths SQLite would read differently than the caller wrote them', () => {
  // better-sqlite3 hands the path to SQLite as a C string, so it used to open (and create) the file named by
  // the part before the NUL: 'ops.db\0.bak' opened ops.db.
  it('refuses a path with a NUL character instead of opening the file named by its prefix', async () => {
    const dir = freshDir();
    const error = await rejection(sqliteStore({ path: join(dir, 'ops\0.db') }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).toContain('NUL');
    expect(readdirSync(dir)).toEqual([]);
  });

  // Only a shell expands '~'; the store used to create a directory literally named '~' under the working
  // directory, so each working directory got its own empty store.
  it("refuses a path starting with '~' instead of creating a directory named '~'", async () => {
    const dir = freshDir();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      for (const path of ['~/ops.db', '~', '~/.readback/ops.db']) {
        const error = await rejection(sqliteStore({ path }));
        expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
        expect(error.message).toContain('homedir');
      }
    } finally {
      process.chdir(cwd);
    }
    expect(readdirSync(dir)).toEqual([]);
    // A '~' inside a name is just a character.
    const store = await sqliteStore({ path: join(dir, '~draft ops.db') });
    await store.close();
    expect(existsSync(join(dir, '~draft ops.db'))).toBe(true);
  });
});

describe('errors that say which database', () => {
  // SQLite's own words were "unable to open database file", which does not say what is wrong with it.
  it('a directory given as the file is named as a directory', async () => {
    const dir = freshDir();
    const error = await rejection(sqliteStore({ path: dir }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).toBe(`path: ${dir} is a directory, not a database file`);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a database from a newer readback is refused naming the file, as the Postgres store names its schema', async () => {
    const path = join(freshDir(), 'future.db');
    const store = await sqliteStore({ path });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const db = await openHandle(path);
    db.prepare('INSERT INTO readback_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
      SQLITE_SCHEMA_VERSION + 1,
      'from the future',
      0,
    );
    db.close();
    const before = readFileSync(path);
    const error = await rejection(sqliteStore({ path }));
    expect(error).toMatchObject({ code: 'store_conflict', field: 'path' });
    expect(error.message).toContain(`${path} has readback schema v${SQLITE_SCHEMA_VERSION + 1}`);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  // A database in rollback-journal mode (a caller's own file) that another process holds exclusively cannot
  // be read until it lets go; that used to be reported as "not a usable SQLite database".
  it('a database locked past busy_timeout is reported as locked, not as unusable', async () => {
    const path = join(freshDir(), 'app.db');
    const db = await openHandle(path);
    db.exec('CREATE TABLE people (name TEXT)');
    db.close();
    const script = `
      import Database from 'better-sqlite3';
      const db = new Database(${JSON.stringify(path)});
      db.exec("BEGIN EXCLUSIVE; INSERT INTO people VALUES ('ana')");
      process.stdout.write('locked\\n');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
      db.exec('ROLLBACK');
      db.close();`;
    const holder = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const error = await rejection(sqliteStore({ path }, { busyTimeoutMs: 100 }));
    expect(await exited).toBe(0);
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).not.toContain('not a usable SQLite database');
    expect(error.message).toContain('locked');
    expect(error.message).toContain('busyTimeoutMs');
    // Once the lock is gone the same file opens, keeping the caller's table.
    const store = await sqliteStore({ path });
    await store.close();
    const after = await openHandle(path);
    expect(after.prepare('SELECT count(*) AS n FROM people').get()).toEqual({ n: 0 });
    after.close();
  }, 20_000);
});

// Runs a module script in a child that file permissions bind. Root writes anywhere: as root the child runs without
// the capabilities that override file permissions (setpriv), still root, so it reads the checkout wherever it lies
// (a 0700 temp dir, say) but cannot write where the mode says no. Another user would need every directory above
// the checkout to be open to it. Returns the child's stdout.
async function runAsReader(script: string): Promise<string> {
  const node = [process.execPath, '--input-type=module', '-e', script];
  const dropCaps = [
    '--inh-caps=-dac_override,-dac_read_search',
    '--bounding-set=-dac_override,-dac_read_search',
  ];
  const [command, ...args] = process.getuid?.() === 0 ? ['setpriv', ...dropCaps, '--', ...node] : node;
  const { stdout } = await promisify(execFile)(command!, args);
  return stdout;
}

describe('a store this user may read but not write beside', () => {
  // A WAL database can only be read by a connection that can create its -wal and -shm files; in a directory
  // the user cannot write (an operator's account, a mounted backup) SQLite says "attempt to write a readonly
  // database", which used to come out as "not a usable SQLite database".
  it('is reported as a permissions problem naming the -wal and -shm files, and left alone', async () => {
    const compiled = await compileSqliteStore();
    const dir = freshDir();
    const path = join(dir, 'ops.db');
    const store = await sqliteStore({ path });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const before = readFileSync(path);
    chmodSync(path, 0o444);
    chmodSync(dir, 0o555);
    try {
      const script = `
        const { sqliteStore } = await import(${JSON.stringify(compiled.entry)});
        try { await sqliteStore({ path: ${JSON.stringify(path)} }); console.log('{"opened":true}'); }
        catch (e) { console.log(JSON.stringify({ code: e.code, field: e.field, message: e.message })); }`;
      const stdout = await runAsReader(script);
      const reported = JSON.parse(stdout) as { code: string; field: string; message: string };
      expect(reported).toMatchObject({ code: 'invalid_options', field: 'path' });
      expect(reported.message).toContain(path);
      expect(reported.message).not.toContain('not a usable SQLite database');
      expect(reported.message).toContain('-wal and -shm');
    } finally {
      chmodSync(dir, 0o755);
      chmodSync(path, 0o644);
      rmSync(compiled.dir, { recursive: true, force: true });
    }
    expect(readdirSync(dir)).toEqual(['ops.db']);
    expect(readFileSync(path).equals(before)).toBe(true);
  }, 30_000);
});

describe('an older store this user may read but not write', () => {
  // `readback ops list` run by an operator who may only read the file: the file is current but for index steps
  // (v2 and v3), which reads need not wait for. It opens as it is, lists its operations, and keeps its schema for a writer.
  it('opens the v1 fixture for reading without the index step, and leaves the file as it was', async () => {
    const compiled = await compileSqliteStore();
    const dir = freshDir();
    const path = join(dir, 'v1.db');
    copyFileSync(join(import.meta.dirname, '..', 'fixtures', 'sqlite', 'v1.db'), path);
    const before = readFileSync(path);
    // Only the file is read-only: SQLite may create its -wal and -shm beside it, as reading a WAL file needs.
    chmodSync(path, 0o444);
    try {
      const script = `
        const { sqliteStore } = await import(${JSON.stringify(compiled.entry)});
        try {
          const store = await sqliteStore({ path: ${JSON.stringify(path)} });
          const ids = (await store.list({})).map((r) => r.id).sort();
          let claim = 'claimed';
          try { await store.claimDue(1, 1000, 'w', Date.now(), { actions: ['ticket.resolve'] }); }
          catch (e) { claim = e.message; }
          await store.close();
          console.log(JSON.stringify({ ids, claim }));
        } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
      const stdout = await runAsReader(script);
      const reported = JSON.parse(stdout) as { ids?: string[]; claim?: string; message?: string };
      expect(reported.ids, reported.message).toEqual(['op-1', 'op-2', 'op-3', 'op-4', 'op-5']);
      // A write through it fails as on any file this user cannot write.
      expect(reported.claim).toContain('readonly');
    } finally {
      chmodSync(path, 0o644);
      rmSync(compiled.dir, { recursive: true, force: true });
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    const db = await openHandle(path);
    expect(db.prepare('SELECT MAX(version) AS v FROM readback_migrations').get()).toEqual({ v: 1 });
    db.close();
    expect(SQLITE_SCHEMA_VERSION).toBeGreaterThan(1);
  }, 30_000);
});

// Not a defect, pinned because a demanding user asked: a crashed writer's -wal file is recovered on open.
describe('a crashed writer', () => {
  it('leaves a -wal file whose commits the next open recovers, even without its -shm', async () => {
    const live = join(freshDir(), 'ops.db');
    const store = await sqliteStore({ path: live });
    for (let i = 1; i <= 5; i++) await store.reserve(newOp(i), ev('reserved'));
    // The files as a crash (or kill -9) leaves them: the commits are in the -wal, not yet in the database.
    const crashed = join(freshDir(), 'ops.db');
    copyFileSync(live, crashed);
    copyFileSync(`${live}-wal`, `${crashed}-wal`);
    await store.close();
    expect(readFileSync(`${crashed}-wal`).length).toBeGreaterThan(0);
    const reopened = await sqliteStore({ path: crashed });
    expect((await reopened.list({})).map((r) => r.id).sort()).toEqual([
      'op-1',
      'op-2',
      'op-3',
      'op-4',
      'op-5',
    ]);
    await reopened.close();
  });
});
