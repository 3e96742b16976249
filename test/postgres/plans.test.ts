import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { claimDueByActionSql, statementsFor, tablesIn, transitionSql } from '../../src/postgres/sql.js';
import { ev, newOp, T0 } from '../../src/testing/conformance/support.js';
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

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
const byPrimaryKey = (node: PlanNode): boolean =>
  node['Index Name'] === 'operations_pkey' || (node.Plans ?? []).some(byPrimaryKey);
// A scan of the operations table other than a lookup by primary key (the UPDATE finding the claimed rows).
const readsOperations = (node: PlanNode): boolean =>
  node['Node Type'].endsWith('Scan') && node['Relation Name'] === 'operations' && !byPrimaryKey(node);

/** One claim statement to plan: its text, the types of its parameters from $7 on, and its arguments as SQL. */
interface ClaimCase {
  label: string;
  sql: string;
  types: string;
  args: string;
}

/**
 * Each case under a custom and a generic plan, on the table as it is and then analyzed: prepared and run under
 * EXPLAIN ANALYZE, with `check` given its scans of `operations` (other than lookups by primary key) and a way to run
 * it once more, in a transaction rolled back after.
 */
async function eachClaimPlan<C extends ClaimCase>(
  client: pg.PoolClient,
  schema: string,
  cases: C[],
  check: (
    name: string,
    reads: PlanNode[],
    again: () => Promise<{ action: string }[]>,
    c: C,
  ) => void | Promise<void>,
): Promise<void> {
  let n = 0;
  for (const analyzed of [false, true]) {
    // Analyzed too: with statistics, a generic plan of the claim's UPDATE took the claimed rows for a tenth of
    // the table and joined them by a scan of all of it.
    if (analyzed) await client.query(`ANALYZE "${schema}".operations`);
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      for (const c of cases) {
        const statement = `claim_${++n}`;
        await client.query('BEGIN');
        try {
          await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
          await client.query(
            `PREPARE ${statement}(bigint, int, text, float8, int, bigint, ${c.types}) AS ${c.sql}`,
          );
          const { rows } = await client.query(
            `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${statement}(${c.args})`,
          );
          const reads = nodesOf((rows[0]['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan).filter(
            readsOperations,
          );
          const again = async () => (await client.query(`EXECUTE ${statement}(${c.args})`)).rows;
          await check(`${mode}, ${c.label}${analyzed ? ', analyzed' : ''}`, reads, again, c);
        } finally {
          await client.query('ROLLBACK');
        }
      }
    }
  }
}

// A reconciler claims 32 due operations at a time; the claim must walk the due index in order and stop there.
// On a table never analyzed (autovacuum off, or before its first run) a custom plan for a claim restricted to
// some actions used to take the `action` index instead: a bitmap scan of every row of those actions, then a
// sort of all the due ones, on every claim (40 ms per claim with 20 000 due, where the index walk takes 1.5).
describe.skipIf(!available)('plan of the claim of due operations', () => {
  it('walks the due index in order and reads about as many rows as it claims', async () => {
    const schema = tempSchema();
    const pool = tempPool(4);
    const store = await postgresStore({ pool, schema });
    const claimDue = statementsFor(tablesIn(schema)).claimDue;
    // Big enough that reading every due row costs more than the walk (on a small table either plan is cheap).
    const due = 20_000;
    for (let i = 0; i < due; i += 1_000) {
      await Promise.all(
        Array.from({ length: 1_000 }, (_, k) =>
          store.reserve(newOp(i + k, { nextPollAt: T0 + i + k }), ev('reserved')),
        ),
      );
    }
    const client = await pool.connect();
    try {
      const cases = ["ARRAY['ticket.resolve']", 'NULL'].map((actions) => ({
        label: `actions ${actions}`,
        sql: claimDue,
        types: 'text[]',
        args: `${T0 + due}, 32, 'w', 30000, 1, NULL, ${actions}`,
      }));
      await eachClaimPlan(client, schema, cases, (name, reads) => {
        expect(
          reads.map((node) => `${node['Node Type']} ${node['Index Name']}`),
          name,
        ).toEqual(['Index Scan operations_due']);
        expect(reads[0]!['Actual Rows'], name).toBe(32);
      });
    } finally {
      client.release();
      await store.close();
    }
  });
});

// On a schema shared with other services, a reconciler names the actions it knows. Their due operations may come
// after thousands of another service's: the claim must walk each named action on operations_due_by_action and
// read about as many rows as it claims, not walk operations_due past every other due operation.
describe.skipIf(!available)('plan of a claim naming its actions, on a schema other services share', () => {
  it('walks each named action on its own index and reads about as many rows as it claims', async () => {
    const schema = tempSchema();
    const pool = tempPool(4);
    const store = await postgresStore({ pool, schema });
    const tables = tablesIn(schema);
    const others = 10_000;
    for (let i = 0; i < others; i += 1_000) {
      await Promise.all(
        Array.from({ length: 1_000 }, (_, k) =>
          store.reserve(
            newOp(`other-${i + k}`, { action: 'other.service', nextPollAt: T0 + i + k }),
            ev('reserved'),
          ),
        ),
      );
    }
    // Ours are due after every one of theirs, 1 000 of each of two actions.
    for (let i = 0; i < 2_000; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, k) => {
          const n = i + k;
          const action = n % 2 ? 'ticket.resolve' : 'ticket.close';
          return store.reserve(newOp(`ours-${n}`, { action, nextPollAt: T0 + others + n }), ev('reserved'));
        }),
      );
    }
    const now = T0 + others + 2_000;
    const client = await pool.connect();
    try {
      const cases = [['ticket.resolve'], ['ticket.resolve', 'ticket.close']].map((actions) => ({
        label: `actions ${actions.join(', ')}`,
        sql: claimDueByActionSql(tables, actions.length),
        types: actions.map(() => 'text').join(', '),
        args: `${now}, 32, 'w', 30000, 1, NULL, ${actions.map((a) => `'${a}'`).join(', ')}`,
        actions,
      }));
      await eachClaimPlan(client, schema, cases, async (name, reads, again, c) => {
        expect(
          reads.map((node) => `${node['Node Type']} ${node['Index Name']}`),
          name,
        ).toEqual(c.actions.map(() => 'Index Scan operations_due_by_action'));
        for (const walk of reads) expect(walk['Actual Rows'], name).toBe(32);
        // EXPLAIN ANALYZE claimed 32 already; the next claim takes the next 32 of ours, none of theirs.
        const claimed = await again();
        expect(claimed, name).toHaveLength(32);
        for (const row of claimed) expect(c.actions, name).toContain(row.action);
      });
    } finally {
      client.release();
      await store.close();
    }
  });
});
