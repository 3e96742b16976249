import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadBetterSqlite3 } from '../../src/sqlite/driver.js';
import { PG_URL, pgAvailable } from '../postgres/support.js';
import { runCli } from './support.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-demo-guard-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('readback demo --store: only a SQLite file the demo may write', () => {
  it('refuses a URL of any scheme before writing anything, without echoing its password (exit 2)', async () => {
    const schema = `readback_demo_url_${process.pid}`;
    const withPassword = PG_URL.replace(/^postgres:\/\/([^:@/]+)@/, 'postgres://$1:hunter2@');
    let schemaMade = false;
    try {
      for (const url of [
        `${withPassword}?schema=${schema}`,
        'postgresql://postgres:hunter2@127.0.0.1:5432/test',
        'mysql://root:hunter2@db/x',
        'https://user:hunter2@example.com/demo.db',
      ]) {
        const r = await runCli(['demo', '--store', url], { env: {} });
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(
          /^readback: 'readback demo' records into a SQLite file, and --store got a \w+:\/\/ URL/,
        );
        expect(r.stderr).not.toContain('hunter2');
        expect(r.stderr).not.toContain('    at ');
        expect(r.stdout).toBe('');
      }
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      // Nothing reached the server: the schema the URL named was not created (and never outlives the test).
      if (await pgAvailable()) {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        try {
          const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
          schemaMade = found.rowCount !== 0;
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        } finally {
          await client.end();
        }
      }
    }
    expect(schemaMade).toBe(false);
  });

  it("refuses another program's SQLite database and leaves it byte-for-byte unchanged (exit 2)", async () => {
    const other = join(dir, 'other.db');
    const raw = new (await loadBetterSqlite3())(other);
    raw.exec(
      "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'ana')",
    );
    raw.close();
    const before = sha(other);
    const r = await runCli(['demo', '--store', other]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `store ${other} is a SQLite database without readback's tables, not a readback store`,
    );
    expect(r.stdout).toBe('');
    expect(sha(other)).toBe(before);
    expect(readdirSync(dir)).toEqual(['other.db']);
  });

  it('refuses a file that is no database, and takes a missing file, an empty file and its own store', async () => {
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'not a database, but something someone wrote\n'.repeat(100));
    const before = sha(notes);
    const r = await runCli(['demo', '--store', notes]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not a SQLite database');
    expect(sha(notes)).toBe(before);

    const fresh = join(dir, 'fresh.db');
    expect((await runCli(['demo', '--store', fresh, '--json'])).code).toBe(0);
    expect((await runCli(['demo', '--store', fresh, '--json'])).code).toBe(0);
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    expect((await runCli(['demo', '--store', empty, '--json'])).code).toBe(0);
    expect(JSON.parse((await runCli(['ops', 'list', '--store', empty, '--json'])).stdout)).toHaveLength(9);
  });
});

describe('readback reconcile on the demo store with a damaged side file', () => {
  it('names the file and what is wrong with it in one line (exit 1, kind failed)', async () => {
    const store = join(dir, 'e.db');
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    const side = `${store}.demo-mail.json`;
    for (const [content, problem] of [
      ['{bad', /could not be read as JSON \(.+\)/],
      ['{"version":1,"messages":"x"}', /is not a saved mail queue \('messages' is not a list\)/],
      ['{"version":2,"messages":[]}', /is not a saved mail queue \(expected/],
      ['{"version":1,"messages":[1]}', /message 0 has no string messageId/],
    ] as const) {
      writeFileSync(side, content);
      const r = await runCli(['reconcile', '--store', store, '--once']);
      expect(r.code).toBe(1);
      expect(r.stderr.split('\n')).toHaveLength(2);
      expect(r.stderr).toMatch(new RegExp(`^readback: demo state ${side.replace(/[.]/g, '\\.')} `));
      expect(r.stderr).toMatch(problem);
      expect(r.stderr).not.toContain('unexpected error');
      const json = await runCli(['reconcile', '--store', store, '--once', '--json']);
      expect(JSON.parse(json.stdout).error).toMatchObject({ kind: 'failed', exitCode: 1 });
      expect(readFileSync(side, 'utf8')).toBe(content);
    }
    expect(existsSync(store)).toBe(true);
  });
});
