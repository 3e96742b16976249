// Run by node-sqlite.test.ts under a Node that has node:sqlite (22.5 and later): the store over node:sqlite's own
// DatabaseSync, through the whole conformance suite and one committed action. Prints one JSON line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAction } from '../../src/contract/define.js';
import { createRunner } from '../../src/runner/runner.js';
import type { SqliteLike } from '../../src/sqlite/driver.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { storeConformance } from '../../src/testing/store-conformance.js';

// A string, so this file type-checks against Node 20's types, which have no node:sqlite.
const NODE_SQLITE: string = 'node:sqlite';
const { DatabaseSync } = (await import(NODE_SQLITE)) as { DatabaseSync: new (path: string) => SqliteLike };

const dir = mkdtempSync(join(tmpdir(), 'readback-node-sqlite-'));
let files = 0;
const open = () => new DatabaseSync(join(dir, `case-${++files}.db`));

const cases: { name: string; error?: string }[] = [];
for (const c of storeConformance(() => sqliteStore({ database: open() }))) {
  try {
    await c.run();
    cases.push({ name: c.name });
  } catch (error) {
    cases.push({ name: c.name, error: (error as Error).message });
  }
}

const rows = new Map<string, string>();
const action = defineAction({
  name: 'set_status',
  description: 'Sets a row status',
  input: {
    '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value: value as { id: string } }) },
  },
  target: (i) => `row:${i.id}`,
  postcondition: 'The row has the requested status.',
  execute: async (i) => {
    rows.set(i.id, 'done');
    return { ok: true };
  },
  observe: async (i) => (rows.has(i.id) ? { status: rows.get(i.id) } : null),
  expect: () => ({ status: 'done' }),
});
const db = open();
const store = await sqliteStore({ database: db });
const completion = await createRunner({ store }).run(action, { id: 'a' }, { runId: 'r' });
const events = (await store.events(completion.operationId)).map((e) => e.type);
await store.close();
db.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ node: process.version, cases, run: { status: completion.status, events } }));
