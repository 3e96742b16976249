import { CLAIMABLE_LIFECYCLES } from '../sqlite/sql.js';
import { LIFECYCLES } from '../store/records.js';
import type { ListFilter } from '../store/types.js';

// How Postgres locks, once, so the per-statement notes can be short. Every write is ONE statement,
// so it is atomic in its own implicit transaction on whatever connection runs it; its event insert
// rides along in a data-modifying CTE. Row locks are taken by the UPDATE (or a FOR NO KEY UPDATE
// sub-select) of the operation row, and the next event seq comes from that locked row's event_seq,
// so concurrent writers of one operation serialize on its row and never share a seq. Reads are
// plain snapshot reads and never wait. Due times (next_poll_at) are compared with the caller's `now`,
// since the runner wrote them from its clock; lease times come from the lease clock: the server's
// clock_timestamp() unless the store was opened with leaseClock 'caller' (then the caller's `now`).

/** The server's clock in epoch milliseconds, read when the statement evaluates it. */
const DB_NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** The quoted, schema-qualified names of readback's tables in one schema. */
export interface Tables {
  schema: string;
  operations: string;
  events: string;
  migrations: string;
}

/** The table names inside `schema` (already validated as a plain identifier). */
export function tablesIn(schema: string): Tables {
  const q = `"${schema}"`;
  return { schema: q, operations: `${q}.operations`, events: `${q}.events`, migrations: `${q}.migrations` };
}

// The column list in sqlite/rows.ts's INSERT order, which recordParams follows.
const OPERATION_COLUMNS = [
  'id',
  'schema_version',
  'action',
  'target',
  'scope',
  'fingerprint',
  'idempotency_key',
  'run_id',
  'actor',
  'input',
  'attempt',
  'lifecycle',
  'status',
  'requested_at',
  'updated_at',
  'executed_at',
  'in_flight_until',
  'accepted_at',
  'last_observed_at',
  'next_poll_at',
  'reads',
  'provider_ref',
  'baseline',
  'completion',
  'lease_owner',
  'lease_token',
  'lease_expires_at',
] as const;

const JSON_COLUMNS = new Set(['scope', 'input', 'provider_ref', 'baseline', 'completion']);
const TIME_COLUMNS = new Set([
  'requested_at',
  'updated_at',
  'executed_at',
  'in_flight_until',
  'accepted_at',
  'last_observed_at',
  'next_poll_at',
  'lease_expires_at',
]);

/** Where `recordParams` (the reserve's $1..$27) binds the time columns. */
export const RESERVE_TIME_PARAMS: readonly number[] = OPERATION_COLUMNS.flatMap((c, i) =>
  TIME_COLUMNS.has(c) ? [i] : [],
);

/** Whether a column holds bigint milliseconds. */
export function isTimeColumn(column: string): boolean {
  return TIME_COLUMNS.has(column);
}

/** The largest LIMIT an int parameter takes; memory and SQLite take any limit, so a larger one is capped. */
export const MAX_LIMIT = 2 ** 31 - 1;

/**
 * The SELECT list that gives rows in exactly the shape SQLite returns, so sqlite/rows.ts maps both:
 * jsonb as JSON text (pg would otherwise parse it, and `'null'::jsonb` would be indistinguishable
 * from SQL NULL), bigint milliseconds as float8 (pg returns int8 as a string; float8 is exact below 2^53).
 */
function selectList(prefix: string): string {
  return OPERATION_COLUMNS.map((c) => {
    const col = `${prefix}${c}`;
    if (JSON_COLUMNS.has(c)) return `${col}::text AS ${c}`;
    if (TIME_COLUMNS.has(c)) return `${col}::float8 AS ${c}`;
    return prefix === '' ? c : `${col} AS ${c}`;
  }).join(', ');
}

const EVENT_COLUMNS = `operation_id, seq, schema_version, at::float8 AS at, type, from_lifecycle, to_lifecycle,
  status, actor, attempt, detail::text AS detail`;

const EVENT_INSERT = `(operation_id, seq, schema_version, at, type, from_lifecycle, to_lifecycle, status, actor, attempt, detail, write_id)`;

/** The parameter count of `reserveSql`'s record part, before its event parameters. */
export const RESERVE_RECORD_PARAMS = OPERATION_COLUMNS.length;

/** Every named statement of one schema. */
export interface Statements {
  /** Reads one operation by id (snapshot read, no lock). $1 id. */
  selectById: string;
  /** Reads one operation by idempotency key through its unique constraint (snapshot read, no lock). $1 key. */
  selectByKey: string;
  /** Reads what a transition's identity check needs (snapshot read: identity fields never change). $1 id. */
  selectIdentity: string;
  /**
   * Reserves: INSERT … ON CONFLICT (idempotency_key) DO NOTHING, which waits on a concurrent insert of the
   * same key and then does nothing, plus the seq-1 event in the same statement. Locks: the new row's
   * unique-index entry. $1..$27 record (recordParams order), then event $28 schema_version, $29 at,
   * $30 type, $31 status, $32 actor, $33 attempt, $34 detail (JSON text or null), $35 write id. A reserve
   * that also starts the operation (`ReserveStart`) binds the record as started and its seq-2 event in $36 at,
   * $37 type, $38 status, $39 actor, $40 attempt, $41 detail; with $37 NULL there is no seq-2 event.
   */
  reserve: string;
  /**
   * Finds the event a store call appended, by the write id it carried, with the operation as it is now
   * (snapshot read). `seq` equal to `event_seq` means that write is still the operation's latest.
   * $1 operation id, $2 write id.
   */
  selectWrite: string;
  /** Reads an operation's event log in seq order (snapshot read over the primary key). $1 id. */
  selectEvents: string;
  /**
   * Leases due rows: FOR NO KEY UPDATE SKIP LOCKED picks rows no other claimer holds, the UPDATE in the
   * same statement writes the lease and bumps event_seq, and a CTE appends each 'claimed' event.
   * Row locks on the claimed rows until the statement commits. Due-ness compares next_poll_at with
   * the caller's $1; lease liveness and the new expiry use $6 when given, else the server's clock.
   * $1 now, $2 limit, $3 owner, $4 lease ms, $5 event schema_version, $6 lease clock (or NULL), $7 the action
   * names to claim (or NULL for any).
   */
  claimDue: string;
  /**
   * Extends a lease while its token still matches and the operation is open: expiry becomes lease
   * clock + $3, never earlier than it was. No event: a heartbeat changes no state anyone reads back.
   * Locks the one row. $1 id, $2 token, $3 lease ms, $4 lease clock (or NULL for the server's clock).
   */
  renewLease: string;
  /**
   * Retention: deletes up to $2 settled operations requested and last changed before $1, with their events, in
   * one statement, oldest first. The requested_at bound and order walk operations_requested from the oldest rows:
   * without the bound, a prune with nothing to delete read the whole table (54 ms for 300 000 rows against
   * 0.02 ms); without the order, planners chose a scan of the table from its start, which in a sweep re-read every
   * row the earlier batches had deleted until a vacuum. The deletes take the ids as an array, which planners
   * look up by primary key even on a table never analyzed (as a join, they read all 1.8 million events of a
   * fresh table to delete 3 000: 582 ms against 10 ms). Rows another session holds are skipped (SKIP LOCKED),
   * so two pruners never wait on each other. Locks: the deleted rows until commit. Returns one row: how many went.
   */
  prune: string;
}

/**
 * The lifecycles a claim may take, written exactly as the predicate of the partial index operations_due
 * (schema.ts): the settled and those waiting for a person are the only ones it leaves out.
 */
const DUE_INDEX_PREDICATE = `lifecycle NOT IN (${LIFECYCLES.filter((l) => !CLAIMABLE_LIFECYCLES.includes(l))
  .map((l) => `'${l}'`)
  .join(', ')})`;

// Due at $1, on the claimable lifecycles (operations_due's own predicate), and with no live lease by the lease clock.
const DUE_NOW = `${DUE_INDEX_PREDICATE}
          AND next_poll_at <= $1::bigint
          AND (lease_expires_at IS NULL OR lease_expires_at <= (SELECT lease_now FROM clock))`;

const MIN_BIGINT = '(-9223372036854775807 - 1)::bigint';

/** Builds the fixed statements for the tables of one schema. */
export function statementsFor(t: Tables): Statements {
  const all = selectList('');
  return {
    selectById: `SELECT ${all} FROM ${t.operations} WHERE id = $1`,
    selectByKey: `SELECT ${all} FROM ${t.operations} WHERE idempotency_key = $1`,
    selectIdentity: `SELECT id, schema_version, idempotency_key, fingerprint, lifecycle FROM ${t.operations} WHERE id = $1`,
    // One text for plain and started reserves, so group commit sends the reserves of one turn together.
    reserve: `WITH ins AS (
        INSERT INTO ${t.operations} (${OPERATION_COLUMNS.join(', ')}, event_seq)
        VALUES (${OPERATION_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')},
          CASE WHEN $37::text IS NULL THEN 1 ELSE 2 END)
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING ${all}
      ), ev AS (
        INSERT INTO ${t.events} ${EVENT_INSERT}
        SELECT id, 1, $28::int, $29::bigint, $30::text, NULL, 'requested', $31::text, $32::text, $33::int, $34::jsonb,
          $35::text
        FROM ins
        UNION ALL
        SELECT id, 2, $28::int, $36::bigint, $37::text, 'requested', lifecycle, $38::text, $39::text, $40::int,
          $41::jsonb, NULL
        FROM ins WHERE $37::text IS NOT NULL
      )
      SELECT * FROM ins`,
    selectEvents: `SELECT ${EVENT_COLUMNS} FROM ${t.events} WHERE operation_id = $1 ORDER BY seq`,
    selectWrite: `SELECT e.seq, ${selectList('o.')}, o.event_seq
      FROM ${t.events} e JOIN ${t.operations} o ON o.id = e.operation_id
      WHERE e.operation_id = $1 AND e.write_id = $2`,
    // The claim must walk operations_due in order and stop after $2 rows, whatever the statistics (a table
    // never analyzed has none): its lifecycle test is the index's own predicate, which a planner without
    // statistics takes as true for ~all rows (`lifecycle IN (…)` it took as ~2 %, and then preferred a full scan
    // and a sort of every due row), and the action filter is an expression no index matches (as
    // `action = ANY($7)` the planner read every row of those actions through their index, then sorted the due
    // ones, per claim).
    claimDue: claimSql(
      t,
      `SELECT id FROM ${t.operations}
        WHERE ${DUE_NOW}
          AND ($7::text[] IS NULL OR array_position($7::text[], action) IS NOT NULL)
        ORDER BY next_poll_at, requested_at, id
        LIMIT $2::int
        FOR NO KEY UPDATE SKIP LOCKED`,
    ),
    prune: `WITH doomed AS (
        SELECT id FROM ${t.operations}
        WHERE requested_at < $1::bigint AND updated_at < $1::bigint AND lifecycle = 'settled'
        ORDER BY requested_at, id
        LIMIT $2::int
        FOR UPDATE SKIP LOCKED
      ), gone AS (
        DELETE FROM ${t.operations} o WHERE o.id = ANY(ARRAY(SELECT id FROM doomed)) RETURNING o.id
      ), ev AS (
        DELETE FROM ${t.events} e WHERE e.operation_id = ANY(ARRAY(SELECT id FROM gone))
      )
      SELECT count(*)::int AS deleted FROM gone`,
    renewLease: `UPDATE ${t.operations}
      SET lease_expires_at = GREATEST(lease_expires_at, COALESCE($4::bigint, ${DB_NOW_MS}) + $3::float8)
      WHERE id = $1 AND lease_token = $2::text AND lifecycle <> 'settled'
      RETURNING lease_expires_at::float8 AS lease_expires_at`,
  };
}

/**
 * A claim: `due` selects and locks the ids to lease (FOR NO KEY UPDATE SKIP LOCKED); the same statement writes
 * the leases and appends their events. A volatile function keeps the clock CTE from being inlined: it is read
 * once per statement.
 */
function claimSql(t: Tables, due: string): string {
  return `WITH clock AS (
        SELECT COALESCE($6::bigint, ${DB_NOW_MS}) AS lease_now
      ), due AS (
        ${due}
      ), claimed AS (
        UPDATE ${t.operations} o
        SET lease_owner = $3::text, lease_token = gen_random_uuid()::text,
          lease_expires_at = clock.lease_now + $4::float8, updated_at = $1::bigint, event_seq = o.event_seq + 1
        FROM clock WHERE o.id = ANY(ARRAY(SELECT id FROM due))
        RETURNING ${selectList('o.')}, o.event_seq
      ), ev AS (
        INSERT INTO ${t.events} ${EVENT_INSERT}
        SELECT id, event_seq, $5::int, $1::bigint, 'claimed', lifecycle, lifecycle, status, $3::text, attempt,
          jsonb_build_object('owner', $3::text, 'leaseExpiresAt', lease_expires_at::bigint), NULL
        FROM claimed
      )
      SELECT * FROM claimed ORDER BY next_poll_at, requested_at, id`;
}

/**
 * `claimDue` for a claim naming `count` distinct actions (1 to MAX_CLAIM_ACTIONS), one per parameter from $7 on:
 * the first $2 due operations of each action, locked (SKIP LOCKED) as each walk of operations_due_by_action
 * finds them, then the first $2 of those. `claimDue` walks every action's due operations in time order on
 * operations_due, so on a schema shared with other services a claim read past all of theirs that were due first.
 * The row range `(action, next_poll_at)` is what makes planners without statistics walk the index in order
 * (with `action = $7` they took a bitmap of every row of the action and sorted it). With several actions, rows
 * one walk locked beyond the first $2 overall stay locked until the statement ends: a concurrent claimer skips
 * them for that moment, and they are claimable again after it.
 */
export function claimDueByActionSql(t: Tables, count: number): string {
  const walk = (k: number) => `SELECT id, next_poll_at, requested_at FROM ${t.operations}
        WHERE (action, next_poll_at) >= ($${7 + k}::text, ${MIN_BIGINT})
          AND (action, next_poll_at) <= ($${7 + k}::text, $1::bigint)
          AND ${DUE_INDEX_PREDICATE}
          AND (lease_expires_at IS NULL OR lease_expires_at <= (SELECT lease_now FROM clock))
        ORDER BY action, next_poll_at, requested_at, id
        LIMIT $2::int
        FOR NO KEY UPDATE SKIP LOCKED`;
  if (count === 1) return claimSql(t, walk(0));
  const walks = Array.from({ length: count }, (_, k) => `SELECT * FROM (${walk(k)}) w${k}`);
  return claimSql(
    t,
    `SELECT id FROM (${walks.join(' UNION ALL ')}) walks
        ORDER BY next_poll_at, requested_at, id
        LIMIT $2::int`,
  );
}

/**
 * Builds the compare-and-set transition: a FOR NO KEY UPDATE sub-select locks the row and yields the
 * lifecycle the event starts from, the UPDATE writes `columns` only while the row is still in one of
 * the `from` lifecycles (never 'settled') and, when guarded, still holds the lease token / attempt,
 * bumping event_seq; a CTE appends the event with that seq. Locks: the one operation row until commit.
 * Parameters: $1 id, $2 from lifecycles (text[]), $3 updated_at, then the column values, then the guard
 * values present, then event schema_version, at, type, status, actor, attempt, detail, write id.
 */
export function transitionSql(
  t: Tables,
  columns: readonly string[],
  guard: { leaseToken: boolean; attempt: boolean; status?: boolean },
): string {
  let n = 3;
  // Column names come only from PATCH_COLUMNS (sqlite/rows.ts), never from a caller's data.
  const sets = columns.map((c) => `${c} = $${++n}${JSON_COLUMNS.has(c) ? '::jsonb' : ''}`);
  // `o.id = $1` as well as the join: the row is then always found through the primary key. With the join
  // alone, a generic plan made while the table was small scans the whole table on every transition.
  const where = ['o.id = $1', 'o.id = cur.id', 'o.lifecycle = ANY($2::text[])', "o.lifecycle <> 'settled'"];
  if (guard.leaseToken) where.push(`o.lease_token = $${++n}::text`);
  if (guard.attempt) where.push(`o.attempt = $${++n}::int`);
  if (guard.status) where.push(`o.status IS NOT DISTINCT FROM $${++n}::text`);
  const e = (k: number) => `$${n + k}`;
  return `WITH cur AS (
      SELECT id, lifecycle FROM ${t.operations} WHERE id = $1 FOR NO KEY UPDATE
    ), upd AS (
      UPDATE ${t.operations} o
      SET ${[...sets, 'updated_at = $3::bigint', 'event_seq = o.event_seq + 1'].join(', ')}
      FROM cur WHERE ${where.join(' AND ')}
      RETURNING ${selectList('o.')}, o.event_seq, cur.lifecycle AS from_lifecycle
    ), ev AS (
      INSERT INTO ${t.events} ${EVENT_INSERT}
      SELECT id, event_seq, ${e(1)}::int, ${e(2)}::bigint, ${e(3)}::text, from_lifecycle, lifecycle,
        ${e(4)}::text, ${e(5)}::text, ${e(6)}::int, ${e(7)}::jsonb, ${e(8)}::text
      FROM upd
    )
    SELECT * FROM upd`;
}

// The event parameters every single write statement ends with, as a batched statement unpacks them.
const EVENT_FIELDS: [name: string, type: string][] = [
  ['e_schema_version', 'integer'],
  ['e_at', 'bigint'],
  ['e_type', 'text'],
  ['e_status', 'text'],
  ['e_actor', 'text'],
  ['e_attempt', 'integer'],
  ['e_detail', 'jsonb'],
  ['e_write_id', 'text'],
];

/** The SQL type of each column a transition may write, for the values a batched transition unpacks. */
function columnType(column: string): string {
  if (JSON_COLUMNS.has(column)) return 'jsonb'; // sent as JSON text inside the batch, as alone
  if (TIME_COLUMNS.has(column)) return 'bigint';
  if (column === 'attempt' || column === 'reads') return 'integer';
  return 'text';
}

/**
 * Builds the batched form of `transitionSql` for one shape (the same columns and guards): many
 * transitions of distinct operations in one statement, each with its own compare-and-set. Its one
 * parameter, $1, is a JSON array holding each transition's `transitionSql` parameters as an array, in
 * the same order ($2's `from` a nested array of names), so the text is fixed per shape and can be
 * prepared once. Locks: the operation rows, taken in id order (so two batches never deadlock on each
 * other) by a FOR NO KEY UPDATE sub-select, until commit. The rows returned are the transitions whose
 * compare-and-set held, each with its event appended at its own next seq; the others changed nothing.
 */
export function transitionBatchSql(
  t: Tables,
  columns: readonly string[],
  guard: { leaseToken: boolean; attempt: boolean; status?: boolean },
): string {
  const fields: [name: string, type: string][] = [
    ['id', 'text'],
    ['from_lifecycles', 'jsonb'],
    ['updated_at', 'bigint'],
    ...columns.map((c, i): [string, string] => [`p${i}`, columnType(c)]),
    ...(guard.leaseToken ? [['lease_token', 'text'] as [string, string]] : []),
    ...(guard.attempt ? [['attempt', 'integer'] as [string, string]] : []),
    ...(guard.status ? [['seen_status', 'text'] as [string, string]] : []),
    ...EVENT_FIELDS,
  ];
  // ->> gives the element as text (SQL NULL for JSON null) and the cast parses it as a lone statement's
  // parameter would be; `from` stays JSON, and `?` asks whether the row's lifecycle is one of its strings.
  const unpack = fields.map(([name, type], i) =>
    name === 'from_lifecycles' ? `x->${i} AS ${name}` : `(x->>${i})::${type} AS ${name}`,
  );
  const sets = columns.map((c, i) => `${c} = cur.p${i}`);
  const where = ['o.id = cur.id', 'cur.from_lifecycles ? o.lifecycle', "o.lifecycle <> 'settled'"];
  if (guard.leaseToken) where.push('o.lease_token = cur.lease_token');
  if (guard.attempt) where.push('o.attempt = cur.attempt');
  if (guard.status) where.push('o.status IS NOT DISTINCT FROM cur.seen_status');
  // cur carries each transition's values next to the row it locked, so the UPDATE joins one row per id.
  return `WITH v AS (
      SELECT ${unpack.join(', ')} FROM jsonb_array_elements($1::jsonb) AS x
    ), cur AS (
      SELECT v.*, o.lifecycle AS from_lifecycle FROM v JOIN ${t.operations} o ON o.id = v.id
      ORDER BY o.id FOR NO KEY UPDATE OF o
    ), upd AS (
      UPDATE ${t.operations} o
      SET ${[...sets, 'updated_at = cur.updated_at', 'event_seq = o.event_seq + 1'].join(', ')}
      FROM cur
      WHERE ${where.join(' AND ')}
      RETURNING ${selectList('o.')}, o.event_seq, cur.from_lifecycle, cur.e_schema_version, cur.e_at, cur.e_type,
        cur.e_status, cur.e_actor, cur.e_attempt, cur.e_detail, cur.e_write_id
    ), ev AS (
      INSERT INTO ${t.events} ${EVENT_INSERT}
      SELECT id, event_seq, e_schema_version, e_at, e_type, from_lifecycle, lifecycle, e_status, e_actor,
        e_attempt, e_detail, e_write_id
      FROM upd
    )
    SELECT ${OPERATION_COLUMNS.join(', ')} FROM upd`;
}

// The start event's parameters a reserve ends with (`Statements.reserve` $36..$41), as a batched one unpacks them.
const START_FIELDS: [name: string, type: string][] = [
  ['s_at', 'bigint'],
  ['s_type', 'text'],
  ['s_status', 'text'],
  ['s_actor', 'text'],
  ['s_attempt', 'integer'],
  ['s_detail', 'jsonb'],
];

/** The SQL type of each operation column, for the values a batched reserve unpacks. */
function operationColumnType(column: string): string {
  if (column === 'schema_version') return 'integer';
  return columnType(column);
}

/**
 * Builds the batched form of the reserve: many new operations in one statement, each with its seq-1
 * event (and its seq-2 event when it starts the operation). Its one parameter, $1, is a JSON array holding
 * each reserve's parameters (the single statement's $1..$41, in order). Rows are inserted in idempotency-key order, so two batches never
 * deadlock on each other's keys; ON CONFLICT (idempotency_key) DO NOTHING skips a key already taken,
 * by another process or by an earlier row of the same batch, and only inserted rows get an event and
 * come back. Locks: the new rows' unique-index entries. An id taken under another key fails the whole
 * statement (the caller then sends each reserve alone).
 */
export function reserveBatchSql(t: Tables): string {
  const fields: [name: string, type: string][] = [
    ...OPERATION_COLUMNS.map((c): [string, string] => [c, operationColumnType(c)]),
    ...EVENT_FIELDS,
    ...START_FIELDS,
  ];
  const unpack = fields.map(([name, type], i) => `(x->>${i})::${type} AS ${name}`);
  return `WITH v AS (
      SELECT ${unpack.join(', ')} FROM jsonb_array_elements($1::jsonb) AS x
    ), ins AS (
      INSERT INTO ${t.operations} (${OPERATION_COLUMNS.join(', ')}, event_seq)
      SELECT ${OPERATION_COLUMNS.join(', ')}, CASE WHEN s_type IS NULL THEN 1 ELSE 2 END
      FROM v ORDER BY idempotency_key
      ON CONFLICT (idempotency_key) DO NOTHING
      RETURNING ${selectList('')}
    ), ev AS (
      INSERT INTO ${t.events} ${EVENT_INSERT}
      SELECT v.id, 1, v.e_schema_version, v.e_at, v.e_type, NULL, 'requested', v.e_status, v.e_actor,
        v.e_attempt, v.e_detail, v.e_write_id
      FROM ins JOIN v ON v.id = ins.id
      UNION ALL
      SELECT v.id, 2, v.e_schema_version, v.s_at, v.s_type, 'requested', ins.lifecycle, v.s_status, v.s_actor,
        v.s_attempt, v.s_detail, NULL
      FROM ins JOIN v ON v.id = ins.id WHERE v.s_type IS NOT NULL
    )
    SELECT * FROM ins`;
}

/** Builds the list query for a filter (one snapshot read; no lock). Order matches the memory store: requestedAt, then id. */
export function listSql(t: Tables, filter: ListFilter): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown, cast: string) => {
    values.push(value);
    return `$${values.length}::${cast}`;
  };
  if (filter.status !== undefined) {
    // IS NOT DISTINCT FROM compares NULL as a value, so `status: null` finds records that have none yet.
    where.push(`status IS NOT DISTINCT FROM ${param(filter.status, 'text')}`);
  }
  if (filter.lifecycle !== undefined) {
    const lifecycles = Array.isArray(filter.lifecycle) ? filter.lifecycle : [filter.lifecycle];
    where.push(`lifecycle = ANY(${param(lifecycles, 'text[]')})`);
  }
  if (filter.action !== undefined) where.push(`action = ${param(filter.action, 'text')}`);
  if (filter.runId !== undefined) where.push(`run_id = ${param(filter.runId, 'text')}`);
  if (filter.dueBefore !== undefined) {
    // Times are whole milliseconds here: a stored time is at or before x exactly when it is at or before floor(x).
    where.push(
      `next_poll_at IS NOT NULL AND next_poll_at <= ${param(Math.floor(filter.dueBefore), 'bigint')}`,
    );
  }
  let text = `SELECT ${selectList('')} FROM ${t.operations}`;
  if (where.length > 0) text += ` WHERE ${where.join(' AND ')}`;
  text += ' ORDER BY requested_at, id';
  if (filter.limit !== undefined) text += ` LIMIT ${param(Math.min(filter.limit, MAX_LIMIT), 'int')}`;
  return { text, values };
}
