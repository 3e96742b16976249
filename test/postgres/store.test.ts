import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { loadPgPool } from '../../src/postgres/driver.js';
import { POSTGRES_SCHEMA_VERSION, postgresStore } from '../../src/postgres/index.js';
import { MIGRATIONS } from '../../src/postgres/schema.js';
import { ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { PG_URL, pgSuite } from './support.js';

describe('loading pg', () => {
  it('names `npm install pg` when the optional peer is missing', async () => {
    const missing = async () => {
      throw Object.assign(new Error("Cannot find package 'pg'"), { code: 'ERR_MODULE_NOT_FOUND' });
    };
    await expect(loadPgPool(missing)).rejects.toMatchObject({
      name: 'ReadbackError',
      code: 'invalid_options',
      message: expect.stringContaining('npm install pg'),
    });
  });

  // pg read 'not a url' as a URL relative to postgres://base and failed later with "getaddrinfo ENOTFOUND
  // base"; with both sources the connection string was ignored. Neither needs a server to be refused.
  it('refuses a connection string that is not a postgres URL, without echoing it, and two sources', async () => {
    for (const connectionString of ['not a url', 'http://u:hunter2@db.example/ops', 'localhost:5432/ops']) {
      const error = await postgresStore({ connectionString }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error).toMatchObject({
        name: 'ReadbackError',
        code: 'invalid_options',
        field: 'connectionString',
      });
      expect(error?.message).toMatch(/postgres:\/\//);
      expect(error?.message).not.toContain('hunter2');
    }
    const pool = { query: async () => ({ rows: [] }) };
    await expect(postgresStore({ connectionString: PG_URL, pool } as never)).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'source',
      message: expect.stringMatching(/not both/),
    });
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    await expect(postgresStore({ connectionString: PG_URL, schema: 'x"; DROP' })).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'schema',
    });
  });
});

const { available, tempSchema, tempPool, schemas } = await pgSuite();

describe.skipIf(!available)('postgresStore misuse', () => {
  it('reserve and transition reject rather than throw synchronously, with ReadbackError instances', async () => {
    const store = await postgresStore({ connectionString: PG_URL, schema: tempSchema() });
    await store.reserve(newOp(1), ev('reserved'));
    const calls: [() => Promise<unknown>, Record<string, unknown>][] = [
      [
        () => store.reserve({ ...newOp(2), id: '' }, ev('reserved')),
        { code: 'invalid_options', field: 'op.id' },
      ],
      [
        () => store.transition('op-1', ['requested'], { lifecycle: 'done' as 'settled' }, ev('x')),
        { code: 'invalid_options', field: 'patch.lifecycle' },
      ],
      [
        () => store.transition('op-1', ['requested'], { attempt: null as unknown as number }, ev('x')),
        { code: 'invalid_options', field: 'patch.attempt' },
      ],
    ];
    for (const [call, expected] of calls) {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = call();
      }).not.toThrow();
      await expect(promise).rejects.toMatchObject({ name: 'ReadbackError', ...expected });
    }
    await store.close();
    let closed: Promise<unknown> | undefined;
    expect(() => {
      closed = store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('x'));
    }).not.toThrow();
    await expect(closed).rejects.toMatchObject({ code: 'store_closed' });
  });
});

describe.skipIf(!available)('postgresStore across processes', () => {
  it('concurrent reserves of one key from two pools create one record', async () => {
    const schema = tempSchema();
    const poolA = new pg.Pool({ connectionString: PG_URL, max: 8 });
    const poolB = new pg.Pool({ connectionString: PG_URL, max: 8 });
    try {
      const a = await postgresStore({ pool: poolA, schema });
      const b = await postgresStore({ pool: poolB, schema });
      for (let round = 0; round < 20; round++) {
        const key = `key-race-${round}`;
        const results = await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            (i % 2 === 0 ? a : b).reserve(newOp(`r${round}-${i}`, { idempotencyKey: key }), ev('reserved')),
          ),
        );
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(new Set(results.map((r) => r.record.id)).size).toBe(1);
        expect(await a.events(results[0]!.record.id)).toHaveLength(1);
      }
      expect(await a.list()).toHaveLength(20);
      await a.close();
      await b.close();
    } finally {
      await poolA.end();
      await poolB.end();
    }
  });

  it('prune skips rows another session holds instead of waiting, and a later prune deletes them', async () => {
    const schema = tempSchema();
    const pool = tempPool(4);
    const store = await postgresStore({ pool, schema });
    for (const n of [1, 2, 3]) {
      await store.reserve(newOp(n), ev('reserved'));
      await store.transition(
        `op-${n}`,
        ['requested'],
        { lifecycle: 'settled', status: 'verified' },
        ev('s', T0 + 1),
      );
    }
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM "${schema}".operations WHERE id = 'op-2' FOR UPDATE`);
      // With the row lock held elsewhere, a prune that waited would hang here until the test timed out.
      expect(await store.prune!({ settledBefore: T0 + 2 })).toBe(2);
      expect((await store.list()).map((r) => r.id)).toEqual(['op-2']);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    expect(await store.prune!({ settledBefore: T0 + 2 })).toBe(1);
    expect(await store.list()).toEqual([]);
    expect(await store.events('op-2')).toEqual([]);
    await store.close();
  });

  it('many stores migrating one fresh schema at once all succeed, applying each step once', async () => {
    const schema = tempSchema();
    const stores = await Promise.all(
      Array.from({ length: 6 }, () => postgresStore({ connectionString: PG_URL, schema })),
    );
    const { record } = await stores[0]!.reserve(newOp(1), ev('reserved'));
    expect(await stores[5]!.get('op-1')).toEqual(record);
    await Promise.all(stores.map((s) => s.close()));
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT version FROM "${schema}".migrations ORDER BY version`);
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      expect(rows.at(-1)?.version).toBe(POSTGRES_SCHEMA_VERSION);
    } finally {
      await client.end();
    }
  });

  it('brings a v2 schema with operations in it to v3: the claim by action finds them on the new index', async () => {
    const schema = tempSchema();
    const first = await postgresStore({ connectionString: PG_URL, schema });
    for (let n = 1; n <= 3; n++) {
      await first.reserve(
        newOp(n, { action: n === 2 ? 'other.service' : 'ticket.resolve', nextPollAt: 1 }),
        ev('reserved'),
      );
    }
    await first.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const indexes = async () =>
      (
        await client.query(
          `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'operations'`,
          [schema],
        )
      ).rows
        .map((r) => r.indexname as string)
        .sort();
    try {
      // Back to what schema v2 had: operations_action, no operations_due_by_action, version 2.
      await client.query(`DROP INDEX "${schema}".operations_due_by_action`);
      await client.query(`CREATE INDEX operations_action ON "${schema}".operations (action)`);
      await client.query(`DELETE FROM "${schema}".migrations WHERE version = 3`);
      expect(await indexes()).toContain('operations_action');
      const store = await postgresStore({ connectionString: PG_URL, schema });
      try {
        const after = await indexes();
        expect(after).toContain('operations_due_by_action');
        expect(after).not.toContain('operations_action');
        const claims = await store.claimDue(10, 30_000, 'w', 2, { actions: ['ticket.resolve'] });
        expect(claims.map((c) => c.record.id).sort()).toEqual(['op-1', 'op-3']);
      } finally {
        await store.close();
      }
      const { rows } = await client.query(`SELECT version FROM "${schema}".migrations ORDER BY version`);
      expect(rows.map((r) => r.version)).toEqual([1, 2, 3]);
    } finally {
      await client.end();
    }
  });

  it('refuses a schema written by a newer readback', async () => {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema });
    await store.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`INSERT INTO "${schema}".migrations VALUES (99, 'future', 0)`);
    } finally {
      await client.end();
    }
    await expect(postgresStore({ connectionString: PG_URL, schema })).rejects.toMatchObject({
      code: 'store_conflict',
    });
  });

  it('close() ends the pool it created; the default schema is readback', async () => {
    const probe = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const exists = async () =>
      (await probe.query(`SELECT to_regnamespace('readback') IS NOT NULL AS found`)).rows[0].found as boolean;
    const existed = await exists();
    const store = await postgresStore({ connectionString: PG_URL });
    expect(await exists()).toBe(true);
    // Leave a shared database as found: drop the default schema only when this test created it.
    if (!existed) schemas.add('readback');
    await probe.end();
    await store.close();
    await store.close();
    await expect(store.get('x')).rejects.toMatchObject({ code: 'store_closed' });
  });

  it('reports an unreachable server as a ReadbackError', async () => {
    await expect(
      postgresStore({ connectionString: 'postgres://postgres@127.0.0.1:1/none', schema: tempSchema() }),
    ).rejects.toMatchObject({ name: 'ReadbackError', code: 'invalid_options' });
  });
});

describe.skipIf(!available)('postgresStore named statements', () => {
  const preparedOn = async (client: pg.Client) =>
    (await client.query(`SELECT name FROM pg_prepared_statements`)).rows.map((r) => String(r.name));

  it('prepares its statements once per connection by default, and not at all when turned off', async () => {
    for (const namedStatements of [undefined, false]) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const store = await postgresStore({
          pool: client,
          schema: tempSchema(),
          ...(namedStatements === undefined ? {} : { namedStatements }),
        });
        for (let i = 0; i < 3; i++) {
          const { record } = await store.reserve(newOp(`n${i}`), ev('reserved'));
          expect(await store.get(record.id)).toMatchObject({ id: record.id, lifecycle: 'requested' });
        }
        const names = await preparedOn(client);
        if (namedStatements === false) expect(names).toEqual([]);
        // Three reserves and three reads, but each statement text is prepared once.
        else expect(names.filter((n) => n.startsWith('readback_')).length).toBe(new Set(names).size);
        if (namedStatements === undefined) expect(names.length).toBeGreaterThanOrEqual(2);
        await store.close();
      } finally {
        await client.end();
      }
    }
  });

  it('refuses a namedStatements that is not a boolean', async () => {
    await expect(
      postgresStore({ connectionString: PG_URL, schema: tempSchema(), namedStatements: 'yes' as never }),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'namedStatements' });
  });
});
