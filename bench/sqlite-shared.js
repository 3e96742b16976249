// What the SQLite benches share: the target action, fresh store files on the disk under test, the runner's
// sequential step and the same record writes issued by hand with better-sqlite3.
import { createHash } from 'node:crypto';
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createRunner, defineAction, memoryStore, newOperationId } from '../dist/index.js';
import { sqliteStore } from '../dist/sqlite/index.js';
import { BEGIN, COMMIT, INSERT_EVENT, INSERT_OPERATION, updateOperationSql } from '../dist/sqlite/sql.js';

// On the real disk, not tmpfs: the point is what an fsync costs. BENCH_DIR overrides.
const ROOT = process.env.BENCH_DIR ?? tmpdir();
mkdirSync(ROOT, { recursive: true });
export const DIR = mkdtempSync(join(ROOT, 'readback-bench-'));
let files = 0;
export const freshPath = () => join(DIR, `b-${++files}.db`);

// The target system: a Map with no I/O, so the store's writes are all that cost anything. With `yieldInExecute`,
// execute answers after a turn of the event loop, as a tool doing I/O would.
export function makeAction({ yieldInExecute = false } = {}) {
  const rows = new Map();
  return defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: {
      '~standard': {
        version: 1,
        vendor: 'bench',
        validate: (value) => ({ value }),
      },
    },
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: async (input) => {
      if (yieldInExecute) await new Promise((resolve) => setImmediate(resolve));
      rows.set(input.id, { id: input.id, status: input.status });
      return { ok: true };
    },
    observe: async (input) => rows.get(input.id) ?? null,
    expect: (input) => ({ status: input.status }),
  });
}

export async function openStore(durability, groupCommit) {
  const path = freshPath();
  return { path, store: await sqliteStore({ path }, { durability, groupCommit }) };
}

/**
 * What one fdatasync of a 4 KiB write costs on the disk under test now, in µs (p50, p99 of 200): the figures in
 * this bench move with it (one commit per write waits for one each; a batch shares one), and it varies a lot on
 * this VM's disk from hour to hour.
 */
export function fsyncLatency() {
  const path = freshPath();
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  const micros = [];
  try {
    for (let i = 0; i < 200; i++) {
      writeSync(fd, block, 0, block.length, (i % 16) * block.length);
      const start = process.hrtime.bigint();
      fdatasyncSync(fd);
      micros.push(Number(process.hrtime.bigint() - start) / 1000);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  micros.sort((a, b) => a - b);
  return { p50: micros[100], p99: micros[197] };
}

export function dispose(path) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

/** Sequential: one `runner.run` per step, each a committed action that must come back verified. */
export async function runnerSteps(durability, groupCommit) {
  const { path, store } = await openStore(durability, groupCommit);
  const runner = createRunner({ store });
  const action = makeAction();
  return {
    async step(i) {
      const c = await runner.run(action, { id: `r${i}`, status: 'done' }, { runId: 'bench' });
      if (c.status !== 'verified') throw new Error(`runner action ${i} came back ${c.status}`);
    },
    async close() {
      await store.close();
      dispose(path);
    },
  };
}

const OP_COLUMNS = 27;
// The runner's one UPDATE for a committed action, the settle, as `updateOperationSql` builds it (the reserve
// inserts the row already moved to executing). `checkSameStatements` proves at start that it, with
// INSERT_OPERATION and INSERT_EVENT, is exactly the writes the store issues.
export const TO_SETTLED = updateOperationSql(
  ['lifecycle', 'status', 'completion', 'next_poll_at', 'last_observed_at'],
  1,
);
/**
 * The completion text the runner stores for one of these actions (its message, checks, evidence), from a real
 * run: the hand loop binds it, so both loops bind and read back the same characters, not only the same length.
 * The message quotes the postcondition in curly quotes, which makes the text a two-byte string in V8, and
 * binding it and reading it back (RETURNING) costs a few µs more than ASCII of the same length.
 */
export async function runnerCompletionText() {
  const runner = createRunner({ store: memoryStore() });
  const completion = await runner.run(makeAction(), { id: 'r1', status: 'done' }, { runId: 'bench' });
  if (completion.status !== 'verified') throw new Error(`the probe action came back ${completion.status}`);
  return JSON.stringify(completion);
}
export const COMPLETION = await runnerCompletionText();
const SETTLE_DETAIL = '{"raw":{"ok":true},"errorCode":null}';

/**
 * The same record writes with better-sqlite3 by hand: the reserve INSERT of the row already moved to executing
 * and its two events (reserved, executing) in one BEGIN IMMEDIATE … COMMIT, then the settle UPDATE + event in another, as the runner's
 * sequential path commits them, with the target's write and read between them. Same schema and pragmas
 * (the store creates the file), same statement texts, and values of the same shape and size as the
 * runner's (time-ordered ids from `newOperationId`, SHA-256 fingerprints, the text of a real completion), so
 * both write the same pages; but no record objects, no JSON encoding or parsing, no read-backs, no checks.
 * `batch(seqs)` runs the same stages for many actions at once, each stage's writes in one transaction, as
 * group commit does when none of them fails (no savepoints).
 */
export async function handSteps(durability) {
  const { path, store } = await openStore(durability, false);
  await store.close();
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  const begin = db.prepare(BEGIN);
  const commit = db.prepare(COMMIT);
  const insertOp = db.prepare(INSERT_OPERATION);
  const insertEvent = db.prepare(INSERT_EVENT);
  // Its RETURNING row comes back as an array, as the store reads them (better-sqlite3's raw mode).
  const toSettled = db.prepare(TO_SETTLED).raw(true);
  const rows = new Map();
  const tx = (body) => {
    begin.run();
    body();
    commit.run();
  };
  // Each stage's writes for one action; an action is its id, its time and its sequence number.
  const reserve = (i) => {
    const id = newOperationId();
    const now = Date.now();
    const fingerprint = createHash('sha256').update(`set_status:r${i}`).digest('hex');
    const key = `bench:set_status:${fingerprint.slice(0, 32)}`;
    const input = `{"id":"r${i}","status":"done"}`;
    const params = Array(OP_COLUMNS).fill(null);
    params.splice(
      0,
      12,
      id,
      1,
      'set_status',
      `row:r${i}`,
      '{}',
      fingerprint,
      key,
      'bench',
      null,
      input,
      1,
      'executing',
    );
    params[13] = now; // requested_at
    params[14] = now; // updated_at
    params[15] = now; // executed_at
    params[19] = now + 60_000; // next_poll_at
    params[20] = 0; // reads
    if (params.length !== OP_COLUMNS) throw new Error('bad params');
    insertOp.run(params);
    insertEvent.run(id, id, 1, now, 'reserved', null, 'requested', null, null, 0, null);
    insertEvent.run(id, id, 1, now, 'executing', 'requested', 'executing', null, null, 1, null);
    return { id, now, i };
  };
  const effect = async ({ i }) => {
    await Promise.resolve(rows.set(`r${i}`, { status: 'done' }));
    const row = await Promise.resolve(rows.get(`r${i}`));
    if (row?.status !== 'done') throw new Error(`hand action ${i} did not verify`);
  };
  const settled = ({ id, now }) => {
    // lifecycle, status, completion, next_poll_at, last_observed_at, updated_at; id, from; guards.
    toSettled.get('settled', 'verified', COMPLETION, null, now, now, id, 'executing', 0, null, 0, null);
    insertEvent.run(id, id, 1, now, 'settled', 'executing', 'settled', 'verified', null, 1, SETTLE_DETAIL);
  };
  return {
    async step(i) {
      let action;
      tx(() => {
        action = reserve(i);
      });
      await effect(action);
      tx(() => settled(action));
    },
    async batch(seqs) {
      let actions;
      tx(() => {
        actions = seqs.map(reserve);
      });
      await Promise.all(actions.map(effect));
      tx(() => actions.forEach(settled));
    },
    async close() {
      db.close();
      dispose(path);
    },
  };
}
