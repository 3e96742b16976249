// The Postgres claim on a schema another service shares: its due operations come first, ours after them. A
// reconciler names the actions it knows; the claim naming them walks each on operations_due_by_action
// (`claimDueByActionSql`) where `claimDue` walks every due operation in time order and skips the others'.
// Both run in one transaction each, rolled back, alternating on the same tables; they must claim the same rows.
// Run with `npm run bench:postgres-claim` (builds first); needs a server (READBACK_PG_URL).
import pg from 'pg';
import { postgresStore } from '../dist/postgres/index.js';
import { claimDueByActionSql, statementsFor, tablesIn } from '../dist/postgres/sql.js';
import { PG_URL } from './postgres-shared.js';

const OTHERS = Number(process.env.BENCH_DUE ?? 20_000);
const MINE = 500;
const LIMIT = 32;
const REPEAT = 50;
const T0 = 1_700_000_000_000;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
const schema = `bench_claim_${process.pid}`;
const store = await postgresStore({ pool, schema });
const tables = tablesIn(schema);
const operation = (id, action, nextPollAt) => ({
  id,
  action,
  target: `row:${id}`,
  scope: {},
  fingerprint: `fp-${id}`,
  idempotencyKey: `key-${id}`,
  runId: 'bench',
  actor: null,
  input: { id },
  requestedAt: T0,
  nextPollAt,
});
const reserved = {
  type: 'reserved',
  at: T0,
  from: null,
  to: 'requested',
  status: null,
  actor: null,
  attempt: 0,
};
try {
  for (let i = 0; i < OTHERS + MINE; i += 1_000) {
    await Promise.all(
      Array.from({ length: Math.min(1_000, OTHERS + MINE - i) }, (_, k) => {
        const n = i + k;
        const action = n < OTHERS ? 'other.service' : 'set_status';
        return store.reserve(operation(`op-${n}`, action, T0 + n), reserved);
      }),
    );
  }
  await pool.query(`ANALYZE ${tables.operations}`);
  const now = T0 + OTHERS + MINE;
  const common = [now, LIMIT, 'bench', 30_000, 1, null];
  const forms = [
    ['claimDue, actions [set_status]', statementsFor(tables).claimDue, [...common, ['set_status']]],
    ['claimDueByActionSql(1)', claimDueByActionSql(tables, 1), [...common, 'set_status']],
  ];
  const client = await pool.connect();
  const times = forms.map(() => []);
  let picked;
  try {
    for (let r = 0; r < REPEAT; r++) {
      for (const [f, [, text, params]] of forms.entries()) {
        await client.query('BEGIN');
        const start = performance.now();
        const { rows } = await client.query({ name: `claim-${f}`, text, values: params });
        times[f].push(performance.now() - start);
        await client.query('ROLLBACK');
        const ids = rows.map((row) => row.id).join(',');
        picked ??= ids;
        if (ids !== picked || rows.length !== LIMIT) throw new Error(`${forms[f][0]} claimed other rows`);
      }
    }
  } finally {
    client.release();
  }
  console.log(
    `Postgres claim of ${LIMIT}, one action's ${MINE} due operations after ${OTHERS} of another's (analyzed), ${REPEAT} each, alternating:`,
  );
  for (const [f, [name]] of forms.entries()) console.log(`  ${name}: ${median(times[f]).toFixed(2)} ms`);
} finally {
  await store.close();
  await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
  await pool.end();
}
