// The SQLite claim with many operations due: the store's SELECT_DUE (one ordered walk of the due index per
// claimable lifecycle) against the one-query form it replaced (all lifecycles at once, then a sort), on the same
// file; then a claim of one service's operations on a file another service's due operations fill (one walk per
// named action against SELECT_DUE's filter); then a whole drain by one `runner.reconcile`.
// Run with `npm run build && node bench/sqlite-claim.js`.
import Database from 'better-sqlite3';
import { createRunner } from '../dist/index.js';
import { sqliteStore } from '../dist/sqlite/index.js';
import {
  CLAIMABLE_LIFECYCLES,
  SELECT_DUE,
  selectDueByActionParams,
  selectDueByActionSql,
  selectDueParams,
} from '../dist/sqlite/sql.js';
// The drain bench's accepted action (already done when read back), as the Postgres drain uses it.
import { drainAction as job } from './postgres-shared.js';
import { dispose, freshPath } from './sqlite-shared.js';

const DUE = Number(process.env.BENCH_DUE ?? 20_000);
const LIMIT = 32;
const REPEAT = 50;
// Of the due operations, this many (the last due) become another service's action for the shared-file case.
const MINE = 500;

// The form SELECT_DUE had until the sixth session: one query over every claimable lifecycle.
const ONE_QUERY = `SELECT id FROM readback_operations
  WHERE lifecycle IN (${CLAIMABLE_LIFECYCLES.map((l) => `'${l}'`).join(', ')})
    AND next_poll_at IS NOT NULL AND next_poll_at <= ?
    AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
    AND (? IS NULL OR action IN (SELECT value FROM json_each(?)))
  ORDER BY next_poll_at, requested_at, id
  LIMIT ?`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Each form REPEAT times, alternating; throws unless all pick the same operations. Median ms per form.
function timeForms(forms) {
  const times = forms.map(() => []);
  let first;
  for (let r = 0; r < REPEAT; r++) {
    forms.forEach(([, statement, params], i) => {
      const start = process.hrtime.bigint();
      const ids = statement.all(...params).map((row) => row.id);
      times[i].push(Number(process.hrtime.bigint() - start) / 1e6);
      first ??= ids;
      if (ids.join() !== first.join()) throw new Error('the forms picked different operations');
    });
  }
  return times.map(median);
}

function table(forms, times) {
  console.log('| selection | ms per claim (median of 50, same file, alternating) |');
  console.log('|---|---:|');
  for (const [i, [label]] of forms.entries()) console.log(`| ${label} | ${times[i].toFixed(2)} |`);
  console.log('');
}

const path = freshPath();
const shared = freshPath();
try {
  const store = await sqliteStore({ path }, { durability: 'normal' });
  const runner = createRunner({ store, actions: [job] });
  for (let i = 0; i < DUE; i += 64) {
    const batch = Array.from({ length: Math.min(64, DUE - i) }, (_, k) => i + k);
    await Promise.all(batch.map((n) => runner.run(job, { id: `j${n}` }, { runId: 'bench', wait: false })));
  }

  const reader = new Database(path, { readonly: true });
  const now = Date.now() + 1;
  const forms = [
    [
      'SELECT_DUE (one walk per lifecycle)',
      reader.prepare(SELECT_DUE),
      selectDueParams(now, '["drain_job"]', LIMIT),
    ],
    [
      'one query, then a sort (before)',
      reader.prepare(ONE_QUERY),
      [now, now, '["drain_job"]', '["drain_job"]', LIMIT],
    ],
  ];
  const times = timeForms(forms);

  // The last MINE due operations become another service's ('mine') in a copy of the file: a claim naming it reads
  // past every 'drain_job' row due before them unless it walks its own action's index.
  reader.exec(`VACUUM INTO '${shared}'`);
  reader.close();
  const sharedDb = new Database(shared);
  sharedDb
    .prepare(
      `UPDATE readback_operations SET action = 'mine' WHERE id IN
         (SELECT id FROM readback_operations ORDER BY next_poll_at DESC, requested_at DESC, id DESC LIMIT ?)`,
    )
    .run(MINE);
  const sharedForms = [
    [
      'one walk per named action and lifecycle',
      sharedDb.prepare(selectDueByActionSql(1)),
      selectDueByActionParams(now, ['mine'], LIMIT),
    ],
    [
      'SELECT_DUE, filtering by action (before)',
      sharedDb.prepare(SELECT_DUE),
      selectDueParams(now, '["mine"]', LIMIT),
    ],
  ];
  const sharedTimes = timeForms(sharedForms);
  sharedDb.close();

  const start = process.hrtime.bigint();
  const report = await runner.reconcile({ once: true, concurrency: LIMIT, leaseMs: 30_000 });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const open = await store.list({ lifecycle: ['accepted'] });
  await store.close();
  if (report.errors > 0 || open.length > 0)
    throw new Error(`drain left ${open.length} open, ${report.errors} errors`);

  console.log(`SQLite claim, ${DUE} operations due, claims of ${LIMIT}, node ${process.version}`);
  console.log('');
  table(forms, times);
  console.log(
    `A claim naming one action, whose ${MINE} due operations come after ${DUE - MINE} of another's:`,
  );
  console.log('');
  table(sharedForms, sharedTimes);
  console.log(`Drain by one runner.reconcile (NORMAL): ${Math.round(DUE / seconds)} operations/s`);
} finally {
  dispose(path);
  dispose(shared);
}
