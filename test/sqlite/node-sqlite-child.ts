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

// A handle its owner closed: refused at open, and every method of a store over it rejects as closed.
const failure = (error: unknown) => {
  const { code, field, message } = error as { code?: string; field?: string; message: string };
  return { code, field, message };
};
const closedEarly = open();
closedEarly.close();
const atOpen = await sqliteStore({ database: closedEarly }).then(() => null, failure);
db.close();
const afterClose: Record<string, unknown> = {};
const calls: [string, () => Promise<unknown>][] = [
  ['get', () => store.get(completion.operationId)],
  ['list', () => store.list()],
  ['claimDue', () => store.claimDue(5, 1_000, 'reconciler', Date.now())],
  ['transition', () => store.transition('x', ['requested'], { lifecycle: 'executing' }, reserved())],
];
for (const [name, call] of calls) afterClose[name] = await call().then(() => null, failure);
await store.close();
rmSync(dir, { recursive: true, force: true });

function reserved() {
  return { type: 'x', at: Date.now(), from: null, to: null, status: null, actor: null, attempt: 0 };
}
const run = { status: completion.status, events };
console.log(JSON.stringify({ node: process.version, cases, run, closed: { atOpen, afterClose } }));
