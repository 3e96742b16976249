import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, newOp, tempDir } from '../fixtures/sqlite/support.js';
import { runCli } from './support.js';

const tmp = tempDir('cli-store-audit');
afterAll(tmp.remove);
const freshDir = tmp.fresh;

// A module with one action, for `readback reconcile --actions`.
const ACTIONS_MODULE = `
import { defineAction } from ${JSON.stringify(pathToFileURL(resolve(import.meta.dirname, '../../src/index.ts')).href)};
import { schema } from ${JSON.stringify(pathToFileURL(resolve(import.meta.dirname, '../../src/testing/schema.ts')).href)};
export const noop = defineAction({
  name: 'noop',
  description: 'Does nothing.',
  input: schema({ id: 'string' }),
  target: (input) => 'noop:' + input.id,
  postcondition: 'Nothing changed.',
  execute: () => ({ ok: true }),
  observe: () => ({ ok: true }),
  expect: () => ({ ok: true }),
});
`;

describe('--store <path> for an existing SQLite store', () => {
  // An empty file and another program's database were usage errors (exit 2), but a file that is no database
  // at all failed with exit 1 and a message naming the path twice ("could not open store X: path: X is …").
  it('refuses a file that is not a SQLite database as a usage error (exit 2), leaving it as it was', async () => {
    const dir = freshDir();
    const path = join(dir, 'notes.db');
    writeFileSync(path, 'these are my notes, not a database\n'.repeat(200));
    const before = readFileSync(path);
    const actions = join(tmp.dir, 'actions.mjs');
    writeFileSync(actions, ACTIONS_MODULE);
    for (const argv of [
      ['ops', 'list', '--store', path],
      ['ops', 'show', 'op-1', '--store', path],
      ['reconcile', '--once', '--store', path, '--actions', actions],
      ['review', '--store', path, '--run', 'r-1', '--request', 'q', '--answer', 'a'],
    ]) {
      const { code, stdout, stderr } = await runCli(argv);
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(stdout).toBe('');
      expect(stderr.split('\n')[0]).toBe(
        `readback: store ${path} is not a SQLite database, not a readback store; pass the store your program or 'readback demo' wrote; readback leaves this file as it is`,
      );
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(dir)).toEqual(['notes.db']);
  });

  // Only a shell expands '~', and bash does not in `--store=~/ops.db`: the CLI looked for a directory named
  // '~' under the working directory and reported an existing store as not found.
  it("expands a leading '~' to the home directory, as the shell would have", async () => {
    const home = freshDir();
    const store = await sqliteStore({ path: join(home, 'my ops.db') });
    await store.reserve(newOp(1), ev('reserved'));
    await store.close();
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      const { code, stdout, stderr } = await runCli(['ops', 'list', '--store=~/my ops.db', '--json']);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect((JSON.parse(stdout) as { id: string }[]).map((r) => r.id)).toEqual(['op-1']);
      const missing = await runCli(['ops', 'list', '--store=~/nope.db']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(`no store at ~/nope.db (file not found at ${join(home, 'nope.db')})`);
    } finally {
      process.env.HOME = saved;
    }
    expect(existsSync(join(process.cwd(), '~'))).toBe(false);
  });
});
