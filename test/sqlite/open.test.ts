import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { DRIVER_INSTALL, openDatabaseFile } from '../../src/sqlite/driver.js';
import { SQLITE_SCHEMA_VERSION, type SqliteStoreOptions, sqliteStore } from '../../src/sqlite/index.js';
import { compileSqliteStore } from '../fixtures/sqlite/compile.mjs';
import { ev, newOp, openHandle, rejection, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('open');
afterAll(tmp.remove);
const freshDir = tmp.fresh;

describe('opening a file', () => {
  it('creates missing parent directories and the database', async () => {
    const path = join(freshDir(), 'a', 'b', 'ops.db');
    const store = await sqliteStore({ path });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    expect(existsSync(path)).toBe(true);
  });

  it('refuses a path under a regular file, naming the path', async () => {
    const file = join(freshDir(), 'not-a-dir');
    writeFileSync(file, 'x');
    const error = await rejection(sqliteStore({ path: join(file, 'sub', 'ops.db') }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).toContain('not-a-dir');
  });

  it('refuses a location nobody can create (even root)', async () => {
    const error = await rejection(sqliteStore({ path: '/proc/readback-nowhere/ops.db' }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
  });

  it('refuses a directory given as the file', async () => {
    const dir = freshDir();
    const error = await rejection(sqliteStore({ path: dir }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a file of garbage without crashing or overwriting it', async () => {
    const dir = freshDir();
    const path = join(dir, 'garbage.db');
    const garbage = Buffer.alloc(8192, 0);
    for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 7919 + 13) % 251;
    writeFileSync(path, garbage);
    const error = await rejection(sqliteStore({ path }));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'path' });
    expect(error.message).toContain('not a usable SQLite database');
    expect(error.message).toContain(path);
    expect(readFileSync(path).equals(garbage)).toBe(true);
    expect(readdirSync(dir)).toEqual(['garbage.db']);
  });

  it('refuses a text file that merely looks like a database name', async () => {
    const path = join(freshDir(), 'notes.db');
    writeFileSync(path, 'SQLite format 3 — not really\n'.repeat(200));
    const before = readFileSync(path);
    expect(await rejection(sqliteStore({ path }))).toMatchObject({ code: 'invalid_options' });
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('refuses a database from a newer schema, and leaves it untouched', async () => {
    const path = join(freshDir(), 'future.db');
    const store = await sqliteStore({ path });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const db = await openHandle(path);
    const next = SQLITE_SCHEMA_VERSION + 1;
    db.prepare('INSERT INTO readback_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
      next,
      'from the future',
      0,
    );
    db.close();
    const before = readFileSync(path);

    const error = await rejection(sqliteStore({ path }));
    expect(error.code).toBe('store_conflict');
    expect(error.message).toContain(`v${next}`);
    expect(error.message).toContain(`v${SQLITE_SCHEMA_VERSION}`);
    expect(error.message).toContain('upgrade readback');
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('opens :memory: privately, with no file and no directory', async () => {
    const a = await sqliteStore({ path: ':memory:' });
    const b = await sqliteStore({ path: ':memory:' });
    await a.reserve(newOp(1), ev('reserved'));
    expect(await b.get('op-1')).toBeNull();
    await a.close();
    await b.close();
  });
});

describe('the driver', () => {
  it('says what to install when better-sqlite3 is missing', async () => {
    const missing = Object.assign(new Error("Cannot find package 'better-sqlite3'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const error = await rejection(openDatabaseFile(join(tmp.dir, 'x.db'), () => Promise.reject(missing)));
    expect(error.code).toBe('invalid_options');
    expect(error.message).toContain(DRIVER_INSTALL);
    expect(DRIVER_INSTALL).toBe('npm install better-sqlite3@12');
    expect(existsSync(join(tmp.dir, 'x.db'))).toBe(false);
  });

  it('says to rebuild when the package is there but its addon will not load', async () => {
    const broken = new Error('The module was compiled against a different Node.js version');
    const error = await rejection(openDatabaseFile(join(tmp.dir, 'y.db'), () => Promise.reject(broken)));
    expect(error.message).toContain('npm rebuild better-sqlite3');
    expect(error.message).toContain('different Node.js version');
  });

  it('really fails that way where better-sqlite3 cannot be resolved', async () => {
    // Compiled into a directory outside the repository, the store has no node_modules to find the driver in.
    const outside = join(tmpdir(), `readback-sqlite-nodriver-${process.pid}`);
    const compiled = await compileSqliteStore();
    try {
      rmSync(outside, { recursive: true, force: true });
      mkdirSync(outside);
      const { cpSync } = await import('node:fs');
      cpSync(compiled.dir, outside, { recursive: true });
      const entry = join(outside, 'src', 'sqlite', 'index.js');
      const script = `
        const { sqliteStore } = await import(${JSON.stringify(entry)});
        try { await sqliteStore({ path: ${JSON.stringify(join(outside, 'ops.db'))} }); console.log('opened'); }
        catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); }`;
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        cwd: outside,
      });
      const reported = JSON.parse(stdout) as { name: string; code: string; message: string };
      expect(reported).toMatchObject({ name: 'ReadbackError', code: 'invalid_options' });
      expect(reported.message).toContain('npm install better-sqlite3@12');
    } finally {
      rmSync(outside, { recursive: true, force: true });
      rmSync(compiled.dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('the root entry never imports the sqlite subpath or its driver', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      expect(text, file).not.toMatch(/better-sqlite3|node:sqlite/);
      for (const [, spec] of text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)\.js'/g)) {
        visit(join(file, '..', `${spec}.ts`));
      }
    };
    visit(join(import.meta.dirname, '..', '..', 'src', 'index.ts'));
    expect(seen.size).toBeGreaterThan(1);
    expect([...seen].filter((f) => f.includes(`${join('src', 'sqlite')}`))).toEqual([]);
  });
});

describe('pragmas and options', () => {
  const pragmas = (db: Awaited<ReturnType<typeof openHandle>>) => ({
    journal: db.prepare('PRAGMA journal_mode').get(),
    synchronous: db.prepare('PRAGMA synchronous').get(),
    timeout: db.prepare('PRAGMA busy_timeout').get(),
  });

  it('sets WAL, synchronous=FULL and a 5 s busy_timeout by default', async () => {
    const db = await openHandle(join(freshDir(), 'p.db'));
    const store = await sqliteStore({ database: db });
    expect(pragmas(db)).toEqual({
      journal: { journal_mode: 'wal' },
      synchronous: { synchronous: 2 },
      timeout: { timeout: 5_000 },
    });
    await store.close();
    db.close();
  });

  /**
   * A real handle whose switch to WAL answers "database is locked" the first `busyTimes` times, as SQLite
   * does (without its busy handler) while another process has a fresh file; `other` replaces that error.
   */
  const lockedForWal = (db: Awaited<ReturnType<typeof openHandle>>, busyTimes: number, other?: Error) => {
    let attempts = 0;
    const handle = Object.create(db) as typeof db & { attempts: () => number };
    handle.exec = (sql: string) => {
      if (sql.includes('journal_mode = WAL') && attempts++ < busyTimes) {
        throw other ?? Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      }
      return db.exec(sql);
    };
    handle.prepare = (sql: string) => db.prepare(sql);
    handle.attempts = () => attempts;
    return handle;
  };

  it('retries the switch to WAL while another process holds a fresh file, within busy_timeout', async () => {
    const db = await openHandle(join(freshDir(), 'p.db'));
    const handle = lockedForWal(db, 3);
    const store = await sqliteStore({ database: handle });
    expect(handle.attempts()).toBe(4);
    expect(pragmas(db).journal).toEqual({ journal_mode: 'wal' });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    db.close();
  });

  it('gives up on the switch to WAL after busy_timeout, and fails at once on any other error', async () => {
    const db = await openHandle(join(freshDir(), 'p.db'));
    const busy = lockedForWal(db, Number.POSITIVE_INFINITY);
    const started = Date.now();
    const error = await rejection(sqliteStore({ database: busy }, { busyTimeoutMs: 150 }));
    expect(error.message).toContain('database is locked');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(busy.attempts()).toBeGreaterThan(2);
    const broken = lockedForWal(db, Number.POSITIVE_INFINITY, new Error('disk I/O error'));
    await expect(sqliteStore({ database: broken })).rejects.toThrow('disk I/O error');
    expect(broken.attempts()).toBe(1);
    db.close();
  });

  it('uses synchronous=NORMAL for durability "normal" and the given busy timeout', async () => {
    const db = await openHandle(join(freshDir(), 'p.db'));
    const store = await sqliteStore({ database: db }, { durability: 'normal', busyTimeoutMs: 250 });
    expect(pragmas(db)).toEqual({
      journal: { journal_mode: 'wal' },
      synchronous: { synchronous: 1 },
      timeout: { timeout: 250 },
    });
    await store.close();
    db.close();
  });

  it('rejects bad options and sources with invalid_options', async () => {
    const bad: [string, () => Promise<unknown>][] = [
      [
        'durability',
        () => sqliteStore({ path: ':memory:' }, { durability: 'fast' } as unknown as SqliteStoreOptions),
      ],
      ['busyTimeoutMs', () => sqliteStore({ path: ':memory:' }, { busyTimeoutMs: -1 })],
      ['busyTimeoutMs', () => sqliteStore({ path: ':memory:' }, { busyTimeoutMs: 1.5 })],
      ['source', () => sqliteStore(null as never)],
      ['path', () => sqliteStore({ path: 42 } as never)],
      ['database', () => sqliteStore({ database: {} } as never)],
    ];
    for (const [field, call] of bad) {
      expect(await rejection(call())).toMatchObject({ code: 'invalid_options', field });
    }
  });

  // Each used to be accepted: '' is SQLite's temporary database, deleted (records and all) on close; options
  // written into the source were ignored; a busy timeout past 2^31-1 is stored by SQLite as 0, "never wait".
  it('refuses an empty path, options in the source, both sources, and a busy timeout SQLite cannot hold', async () => {
    const dir = freshDir();
    const path = join(dir, 'ops.db');
    const handle = await openHandle();
    const bad: [string, RegExp, () => Promise<unknown>][] = [
      ['path', /':memory:'/, () => sqliteStore({ path: '' })],
      ['durability', /pass it second/, () => sqliteStore({ path, durability: 'normal' } as never)],
      ['busyTimeoutMs', /pass it second/, () => sqliteStore({ path, busyTimeoutMs: 50 } as never)],
      ['source', /not both/, () => sqliteStore({ path, database: handle } as never)],
      ['busyTimeoutMs', /0 to 2147483647/, () => sqliteStore({ path }, { busyTimeoutMs: 2 ** 31 })],
    ];
    for (const [field, message, call] of bad) {
      const error = await rejection(call());
      expect(error).toMatchObject({ code: 'invalid_options', field });
      expect(error.message).toMatch(message);
    }
    // Refused before anything was opened or created.
    expect(readdirSync(dir)).toEqual([]);
    handle.close();
  });

  it('refuses a handle inside a transaction, at open and at write', async () => {
    const db = await openHandle();
    db.exec('BEGIN');
    expect(await rejection(sqliteStore({ database: db }))).toMatchObject({ field: 'database' });
    db.exec('ROLLBACK');
    const store = await sqliteStore({ database: db });
    db.exec('BEGIN');
    expect(await rejection(store.reserve(newOp(1), ev('reserved')))).toMatchObject({
      code: 'store_conflict',
    });
    db.exec('ROLLBACK');
    expect((await store.reserve(newOp(1), ev('reserved'))).created).toBe(true);
    await store.close();
    db.close();
  });

  it('shares a caller’s database without touching its user_version or its tables', async () => {
    const db = await openHandle();
    db.exec('PRAGMA user_version = 42; CREATE TABLE app (x INTEGER); INSERT INTO app VALUES (1);');
    const store = await sqliteStore({ database: db });
    await store.close();
    expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: 42 });
    expect(db.prepare('SELECT x FROM app').all()).toEqual([{ x: 1 }]);
    db.close();
  });
});

describe('schema', () => {
  it('records its migration once, however often the file is opened', async () => {
    const path = join(freshDir(), 's.db');
    for (let i = 0; i < 3; i++) await (await sqliteStore({ path })).close();
    const db = await openHandle(path);
    expect(db.prepare('SELECT version, name FROM readback_migrations').all()).toEqual([
      { version: 1, name: 'operations and events' },
      { version: 2, name: 'due operations by action' },
      { version: 3, name: 'one index led by action' },
    ]);
    db.close();
  });

  it('has the indexes the lookups need, and the planner uses them', async () => {
    const db = await openHandle();
    const store = await sqliteStore({ database: db });
    const indexes = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'readback_%' ORDER BY name`)
      .all();
    expect(indexes).toEqual([
      { name: 'readback_operations_due' },
      { name: 'readback_operations_due_by_action' },
      { name: 'readback_operations_idempotency_key' },
      { name: 'readback_operations_run_id' },
      { name: 'readback_operations_status' },
    ]);
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join('; ');
    expect(plan(`SELECT id FROM readback_operations WHERE idempotency_key = 'k'`)).toContain(
      'readback_operations_idempotency_key',
    );
    expect(
      plan(
        `SELECT id FROM readback_operations WHERE lifecycle IN ('running', 'accepted') AND next_poll_at <= 5 ORDER BY next_poll_at`,
      ),
    ).toContain('readback_operations_due');
    expect(plan(`SELECT id FROM readback_operations WHERE status IS 'pending'`)).toContain(
      'readback_operations_status',
    );
    expect(plan(`SELECT id FROM readback_operations WHERE run_id = 'r'`)).toContain(
      'readback_operations_run_id',
    );
    expect(plan(`SELECT id FROM readback_operations WHERE action = 'a'`)).toContain(
      'readback_operations_due_by_action (action=?)',
    );
    expect(
      plan(
        `SELECT id FROM readback_operations WHERE action = 'a' AND lifecycle = 'running' AND next_poll_at <= 5 ORDER BY next_poll_at`,
      ),
    ).toContain('readback_operations_due_by_action (action=? AND lifecycle=? AND next_poll_at<?)');
    await store.close();
    db.close();
  });
});
