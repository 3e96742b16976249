// What the Postgres bench's parent process and its worker processes share: the actions, the raw queue's
// SQL, and how to reach the server.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { accepted, defineAction } from '../dist/index.js';

/** The server the bench uses; READBACK_PG_URL overrides the local default. */
export const PG_URL = process.env.READBACK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

// A minimal Standard Schema, so validation cost is the runner's own and not a library's.
const anyInput = {
  '~standard': { version: 1, vendor: 'bench', validate: (value) => ({ value }) },
};

/** A committed action whose target is a Map in this process: store writes are all it costs. */
export function committedAction(rows = new Map()) {
  return defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: anyInput,
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: async (input) => {
      rows.set(input.id, { id: input.id, status: input.status });
      return { ok: true };
    },
    observe: async (input) => rows.get(input.id) ?? null,
    expect: (input) => ({ status: input.status }),
  });
}

/** The provider's read of a queued job; it reports every job finished, so each claim settles at once. */
export const observeJob = async (id) => ({ id, state: 'done' });

/**
 * An accepted-mode action whose work is already finished when it is read back: a reconciler that claims
 * one of its operations reads once and settles it verified. Polls are due at once (no delay, no jitter).
 */
export const drainAction = defineAction({
  name: 'drain_job',
  description: 'Queues a job at a provider',
  input: anyInput,
  mode: 'accepted',
  target: (input) => `job:${input.id}`,
  postcondition: 'The job is done.',
  execute: async (input) => accepted(`ref-${input.id}`),
  observe: (input) => observeJob(input.id),
  terminal: (observed) => (observed.state === 'done' ? 'succeeded' : 'running'),
  expect: () => ({ state: 'done' }),
  poll: { initialDelayMs: 0, maxDelayMs: 1_000, jitter: 0, maxDurationMs: 3_600_000, maxReads: 20 },
});

/** The raw queue: a minimal table and the SKIP LOCKED claim loop's statements (the limit we compare to). */
export function rawQueueSql(schema) {
  const jobs = `"${schema}".jobs`;
  return {
    create: [
      `CREATE SCHEMA "${schema}"`,
      `CREATE TABLE ${jobs} (id bigint PRIMARY KEY, state text NOT NULL, due_at bigint NOT NULL,
        lease_until bigint, payload jsonb NOT NULL, result jsonb)`,
      `CREATE INDEX jobs_due ON ${jobs} (due_at, id) WHERE state = 'pending'`,
    ],
    seed: `INSERT INTO ${jobs} (id, state, due_at, payload)
      SELECT i, 'pending', $2::bigint, jsonb_build_object('id', 'j' || i) FROM generate_series(1, $1::int) AS i`,
    // Claims up to $3 due rows no other worker holds and leases them, in one statement.
    claim: `UPDATE ${jobs} SET state = 'active', lease_until = $2::bigint
      WHERE id IN (
        SELECT id FROM ${jobs} WHERE state = 'pending' AND due_at <= $1::bigint
        ORDER BY due_at, id LIMIT $3::int FOR UPDATE SKIP LOCKED
      )
      RETURNING id, payload`,
    settleOne: `UPDATE ${jobs} SET state = 'done', result = $2::jsonb, lease_until = NULL
      WHERE id = $1::bigint AND state = 'active'`,
    settleMany: `UPDATE ${jobs} SET state = 'done', result = $2::jsonb, lease_until = NULL
      WHERE id = ANY($1::bigint[]) AND state = 'active'`,
    countDone: `SELECT count(*)::int AS n FROM ${jobs} WHERE state = 'done'`,
  };
}

/** A pool of `max` connections, all opened before timing starts so no loop pays for connecting. */
export async function warmPool(max) {
  // idleTimeoutMillis 0: a connection left idle (a worker that needs fewer than `max` at once) is not
  // closed after pg's default 10 s, so the backends whose CPU the bench reads live until the end.
  const pool = new pg.Pool({ connectionString: PG_URL, max, idleTimeoutMillis: 0 });
  pool.on('error', () => undefined);
  pool.backendPids = await backendPids((text) => pool.query(text), max);
  return pool;
}

/** Opens `max` connections at once (each query holds one briefly) and returns their server process ids. */
export async function backendPids(query, max) {
  const results = await Promise.all(
    Array.from({ length: max }, () => query('SELECT pg_backend_pid() AS pid, pg_sleep(0.02)')),
  );
  return [...new Set(results.map((r) => r.rows[0].pid))];
}

/** Fails with a clear message when the server cannot be reached. */
export async function requireServer() {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new Error(
      `bench:postgres needs a PostgreSQL server at ${PG_URL} (set READBACK_PG_URL to use another): ${error.message}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Experiment, not shipped: a pool that sends every statement as a named prepared statement (pg parses
 * and plans it once per connection, then only binds and executes). It shows what the store would gain
 * by naming its fixed statements; the bench reports it as a separate row.
 */
export function preparingPool(pool) {
  const names = new Map();
  const nameOf = (text) => {
    let name = names.get(text);
    if (name === undefined) {
      name = `rb_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
      names.set(text, name);
    }
    return name;
  };
  return {
    get totalCount() {
      return pool.totalCount;
    },
    query: (text, values) => pool.query({ name: nameOf(text), text, values }),
  };
}
