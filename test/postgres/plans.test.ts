import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { statementsFor, tablesIn, transitionSql } from '../../src/postgres/sql.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { pgSuite } from './support.js';

const { available, tempSchema, tempPool } = await pgSuite();

// Named statements are planned once per connection and the plan is kept: a plan made while the table was
// empty must not scan the whole table once it has grown (each transition would then cost O(rows)).
describe.skipIf(!available)('plans of the single-operation statements', () => {
  it('find the operation through its primary key, even when planned on an empty table', async () => {
    const schema = tempSchema();
    const pool = tempPool(2);
    const store = await postgresStore({ pool, schema });
    const t = tablesIn(schema);
    const s = statementsFor(t);
    const guards = [false, true].flatMap((leaseToken) =>
      [false, true].map((attempt) => ({ leaseToken, attempt })),
    );
    const texts: Record<string, string> = {
      selectById: s.selectById,
      selectIdentity: s.selectIdentity,
      selectWrite: s.selectWrite,
      renewLease: s.renewLease,
      ...Object.fromEntries(
        guards.map((g) => [
          `transition ${JSON.stringify(g)}`,
          transitionSql(t, ['lifecycle', 'attempt', 'next_poll_at'], g),
        ]),
      ),
    };
    const client = await pool.connect();
    try {
      // The generic plan (the one a named statement settles on) is made and cached now, while the table is empty.
      await client.query('SET plan_cache_mode = force_generic_plan');
      const names = Object.keys(texts);
      const explain = async (i: number, text: string) => {
        const params = Math.max(
          ...Array.from(text.matchAll(/\$(\d+)/g), (m: RegExpMatchArray) => Number(m[1])),
        );
        const { rows } = await client.query(
          `EXPLAIN EXECUTE p${i}(${Array(params).fill('NULL').join(', ')})`,
        );
        return rows.map((r) => r['QUERY PLAN'] as string).join('\n');
      };
      for (const [i, name] of names.entries()) {
        await client.query(`PREPARE p${i} AS ${texts[name]}`);
        await explain(i, texts[name]!);
      }
      for (let i = 0; i < 2_000; i += 200) {
        await Promise.all(Array.from({ length: 200 }, (_, k) => store.reserve(newOp(i + k), ev('reserved'))));
      }
      for (const [i, name] of names.entries()) {
        const plan = await explain(i, texts[name]!);
        expect(plan, `${name}:\n${plan}`).not.toMatch(/Seq Scan on operations/);
        expect(plan, name).toMatch(/Index (Only )?Scan using operations_pkey on operations/);
      }
    } finally {
      client.release();
      await store.close();
    }
  });
});
