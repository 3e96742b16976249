// Concurrent `run`s with one idempotency key execute once, across processes: three child node processes
// run the same action with the same ctx.idempotencyKey against one Postgres schema, at the same moment.
// The action's effect is an INSERT into a table in that schema (the durable effect log), so a second
// execution would show as a second row. Same skip/fail rule as the other Postgres tests.
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { compileSources } from '../support/compile.mjs';
import { PG_URL, pgSuite } from './support.js';

/** What a child is told, as JSON in argv[2]. */
interface ChildConfig {
  url: string;
  schema: string;
  key: string;
  /** Wall-clock ms at which every child calls run(), so the three reservations race. */
  startAt: number;
}

/** What a child prints, one JSON line. */
interface ChildReport {
  pid: number;
  operationId: string;
  status: string;
  errorCode?: string;
  reason?: string;
  lifecycle: string | null;
}

// The child: a real runner over postgresStore, one action whose effect is a row in <schema>.effects.
// The execute holds for 300 ms after its INSERT, so the other children reserve while it is in flight.
const CHILD = `
import pg from 'pg';
import { createRunner, defineAction } from './src/index.js';
import { postgresStore } from './src/postgres/index.js';

const config = JSON.parse(process.argv[2]);
const effects = '"' + config.schema + '".effects';
const log = new pg.Pool({ connectionString: config.url, max: 2 });
const store = await postgresStore({ connectionString: config.url, schema: config.schema });
const passThrough = { '~standard': { version: 1, vendor: 'pg-runner-test', validate: (value) => ({ value }) } };

const charge = defineAction({
  name: 'pg.charge',
  description: 'Appends one entry to the effect log; the log has no dedupe of its own',
  postcondition: 'the effect log holds exactly one entry for the key',
  input: passThrough,
  target: (i) => 'order:' + i.order,
  safeToRepeat: false,
  maxInFlightMs: 10_000,
  async execute(i, ctx) {
    await log.query('INSERT INTO ' + effects + ' (key, pid) VALUES ($1, $2)', [ctx.idempotencyKey, process.pid]);
    await new Promise((r) => setTimeout(r, 300));
    return { ok: true };
  },
  async observe(i, ctx) {
    const { rows } = await log.query('SELECT count(*)::int AS n FROM ' + effects + ' WHERE key = $1', [ctx.idempotencyKey]);
    return { entries: rows[0].n };
  },
  expect: () => ({ entries: 1 }),
});

const runner = createRunner({ store, actions: [charge] });
await new Promise((r) => setTimeout(r, Math.max(0, config.startAt - Date.now())));
const c = await runner.run(charge, { order: 'o-1' }, { runId: 'child-' + process.pid, idempotencyKey: config.key });
const record = await store.get(c.operationId);
process.stdout.write(JSON.stringify({ pid: process.pid, operationId: c.operationId, status: c.status, errorCode: c.errorCode, reason: c.reason, next: c.nextAllowedAction, lifecycle: record ? record.lifecycle : null }) + '\\n');
await store.close();
await log.end();
`;

function runChild(script: string, config: ChildConfig): Promise<ChildReport> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').at(-1);
      if (code !== 0 || !line) {
        reject(new Error(`child exited with ${signal ?? code}: ${stderr || stdout}`));
        return;
      }
      resolvePromise(JSON.parse(line) as ChildReport);
    });
  });
}

const { available, tempSchema } = await pgSuite();
let compiled: string | undefined;
afterAll(async () => {
  if (compiled) await rm(compiled, { recursive: true, force: true });
});

describe.skipIf(!available)('runs across processes (Postgres)', () => {
  it('three processes running one idempotency key at once execute it once', async () => {
    const schema = tempSchema();
    compiled = await compileSources(['src/index.ts', 'src/postgres/index.ts'], 'pg-runner');
    const script = join(compiled, 'child.js');
    await writeFile(script, CHILD);

    const db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
    try {
      await db.query(`CREATE SCHEMA "${schema}"`);
      await db.query(
        `CREATE TABLE "${schema}".effects (id serial PRIMARY KEY, key text NOT NULL, pid integer NOT NULL)`,
      );
      const key = `charge-${schema}`;
      // Node starts in well under 1.5 s here; every child then waits for the same instant.
      const startAt = Date.now() + 1_500;
      const reports = await Promise.all(
        [0, 1, 2].map(() => runChild(script, { url: PG_URL, schema, key, startAt })),
      );

      const { rows: effects } = await db.query(`SELECT key, pid FROM "${schema}".effects`);
      expect(effects).toHaveLength(1);
      expect(effects[0]).toMatchObject({ key });
      expect(new Set(reports.map((r) => r.pid)).size).toBe(3);
      expect(reports.map((r) => r.pid)).toContain(effects[0]!.pid);

      // One operation, reported by all three; the one that executed verified it.
      expect(new Set(reports.map((r) => r.operationId)).size).toBe(1);
      // A duplicate never executes; it reads back. Seeing the winner's lease it reports pending/in_progress;
      // reading the log before the winner's INSERT commits it honestly says unknown/in_flight.
      for (const r of reports) {
        expect(['verified/-', 'pending/in_progress', 'unknown/in_flight']).toContain(
          `${r.status}/${r.errorCode ?? '-'}`,
        );
      }
      expect(reports.filter((r) => r.status === 'verified').length).toBeGreaterThanOrEqual(1);

      const { rows: ops } = await db.query(
        `SELECT id, idempotency_key, lifecycle, status FROM "${schema}".operations`,
      );
      expect(ops).toEqual([
        { id: reports[0]!.operationId, idempotency_key: key, lifecycle: 'settled', status: 'verified' },
      ]);
      // The timeline agrees: one reservation, one execution.
      const { rows: events } = await db.query(
        `SELECT type, count(*)::int AS n FROM "${schema}".events WHERE type IN ('reserved', 'executing') GROUP BY type ORDER BY type`,
      );
      expect(events).toEqual([
        { type: 'executing', n: 1 },
        { type: 'reserved', n: 1 },
      ]);
    } finally {
      await db.end();
    }
  });
});
