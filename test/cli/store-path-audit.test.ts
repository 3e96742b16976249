import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, inDir, newOp, openHandle, tempDir } from '../fixtures/sqlite/support.js';
import { runCli } from './support.js';

const tmp = tempDir('cli-store-path-audit');
afterAll(tmp.remove);

describe('--store values that are not a plain SQLite file path', () => {
  // `readback demo --store runs/` used to create a file named 'runs', `--store file:/tmp/x.db` the directories
  // 'file:/tmp', and `--store postgres:/db` (one slash) looked for a file 'postgres:/db'.
  const cases: [string[], string, string][] = [
    [['demo', '--store', 'runs/'], 'runs/', 'names a directory'],
    [['demo', '--store', 'file:/tmp/ops.db'], 'file:/tmp/ops.db', 'is a file: URI'],
    [['demo', '--store', 'file:ops.db?mode=rwc'], 'file:ops.db?mode=rwc', 'is a file: URI'],
    [['demo', '--store', 'ops.db '], 'ops.db ', 'begins or ends with whitespace'],
    [
      ['ops', 'list', '--store', 'postgres:/app@db/ops'],
      'postgres:/app@db/ops',
      'looks like a PostgreSQL URL',
    ],
    [['ops', 'list', '--store', 'ops.db/'], 'ops.db/', 'names a directory'],
  ];
  it.each(cases)('%j is a usage error (exit 2) that creates nothing', async (argv, spec, reason) => {
    const dir = tmp.fresh();
    const { code, stdout, stderr } = await inDir(dir, () => runCli(argv));
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toContain(`readback: store ${spec} ${reason}`);
    expect(readdirSync(dir)).toEqual([]);
  });

  // The CLI resolved 'ops.db/' to 'ops.db', so the slash was silently dropped; like `cat ops.db/`, it is refused.
  it('refuses a trailing slash after an existing store, leaving the store as it was', async () => {
    const dir = tmp.fresh();
    const path = join(dir, 'ops.db');
    const store = await sqliteStore({ path });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const before = readFileSync(path);
    const { code, stderr } = await runCli(['ops', 'list', '--store', `${path}/`]);
    expect(code).toBe(2);
    expect(stderr).toContain('names a directory');
    expect(readFileSync(path).equals(before)).toBe(true);
    expect((await runCli(['ops', 'list', '--store', path, '--json'])).code).toBe(0);
  });

  // A store in use after a TRUNCATE checkpoint has an empty -wal; `--store ops.db-wal` was reported as "an
  // empty file", which hides that it is the store's own log.
  it("names the database whose -wal file was given, and leaves the store's files alone", async () => {
    const dir = tmp.fresh();
    const path = join(dir, 'ops.db');
    const store = await sqliteStore({ path });
    await store.reserve(newOp(1), ev('reserved'));
    const live = await openHandle(path);
    live.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const before = readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))] as const);
    const { code, stderr } = await runCli(['demo', '--store', `${path}-wal`]);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toBe(
      `readback: store ${path}-wal is the write-ahead log of the SQLite database ${JSON.stringify(path)}, not a database; pass ${JSON.stringify(path)}`,
    );
    for (const [f, bytes] of before) expect(readFileSync(join(dir, f)).equals(bytes)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(before.map(([f]) => f).sort());
    live.close();
    await store.close();
  });
});
