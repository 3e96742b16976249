import { readFileSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresStore, preMigrationStatements } from '../../src/postgres/index.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema } = await pgSuite();

// A migration that adds an index to a large table holds writes to it for as long as the build takes. An operator
// may build the indexes beforehand without holding writes (preMigrationStatements); the migration must then take
// them as built, and must not take an index a failed build left invalid for done.
describe.skipIf(!available)('indexes built ahead of a migration', () => {
  /** A schema as readback v1 left it, holding three operations, and a client on the database. */
  async function v1Schema() {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema });
    for (let n = 1; n <= 3; n++) {
      const action = n === 2 ? 'other.service' : 'ticket.resolve';
      await store.reserve(newOp(n, { action, nextPollAt: 1 }), ev('reserved'));
    }
    await store.close();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const s = `"${schema}"`;
    await client.query(`DROP INDEX ${s}.operations_due_by_action`);
    await client.query(`CREATE INDEX operations_action ON ${s}.operations (action)`);
    await client.query(`DROP INDEX ${s}.events_write_id`);
    await client.query(`ALTER TABLE ${s}.events DROP COLUMN write_id`);
    await client.query(`DELETE FROM ${s}.migrations WHERE version > 1`);
    /** The index's catalog id and whether plans may use it; undefined when there is none. */
    const index = async (name: string) => {
      const { rows } = await client.query(
        `SELECT c.oid::int AS oid, i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
        [schema, name],
      );
      return rows[0] as { oid: number; valid: boolean } | undefined;
    };
    const versions = async () =>
      (await client.query(`SELECT version FROM ${s}.migrations ORDER BY version`)).rows.map((r) => r.version);
    return { schema, client, index, versions };
  }

  it('a v1 schema whose indexes were built ahead migrates to v3 without building them again', async () => {
    const { schema, client, index, versions } = await v1Schema();
    try {
      for (const statement of preMigrationStatements(schema, 1)) await client.query(statement);
      const built = { writeId: await index('events_write_id'), due: await index('operations_due_by_action') };
      expect(built.writeId?.valid).toBe(true);
      expect(built.due?.valid).toBe(true);
      const store = await postgresStore({ connectionString: PG_URL, schema });
      try {
        expect(await versions()).toEqual([1, 2, 3]);
        expect(await index('events_write_id')).toEqual(built.writeId);
        expect(await index('operations_due_by_action')).toEqual(built.due);
        expect(await index('operations_action')).toBeUndefined();
        // The migrated store works on them: a transition writes a write id, a claim walks the new index.
        expect(
          await store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('executing')),
        ).not.toBeNull();
        const claims = await store.claimDue(10, 30_000, 'w', 2, { actions: ['ticket.resolve'] });
        expect(claims.map((c) => c.record.id).sort()).toEqual(['op-1', 'op-3']);
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
    }
  });

  it('an index a failed build left invalid is dropped and built afresh by the migration', async () => {
    const { schema, client, index, versions } = await v1Schema();
    try {
      for (const statement of preMigrationStatements(schema, 1)) await client.query(statement);
      // What a cancelled CREATE INDEX CONCURRENTLY leaves behind: the index in the catalog, marked invalid.
      const invalid = await index('operations_due_by_action');
      await client.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1`, [invalid!.oid]);
      expect((await index('operations_due_by_action'))?.valid).toBe(false);
      const store = await postgresStore({ connectionString: PG_URL, schema });
      await store.close();
      expect(await versions()).toEqual([1, 2, 3]);
      const rebuilt = await index('operations_due_by_action');
      expect(rebuilt?.valid).toBe(true);
      expect(rebuilt?.oid).not.toBe(invalid!.oid);
    } finally {
      await client.end();
    }
  });

  it('a current schema has nothing to run ahead; an unusable schema name is refused', () => {
    expect(preMigrationStatements('readback', 3)).toEqual([]);
    expect(() => preMigrationStatements('Bad-Name', 1)).toThrow(expect.objectContaining({ field: 'schema' }));
  });

  it('docs/deployment.md gives the statements for the default schema as this code builds them', () => {
    const doc = readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8');
    for (const statement of preMigrationStatements('readback', 1)) expect(doc).toContain(`${statement};`);
  });
});
