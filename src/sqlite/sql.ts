import { columnNode, columnTrie } from '../store/column-trie.js';
import type { Lifecycle, ListFilter } from '../store/types.js';
import { OPEN_LIFECYCLES } from '../store/types.js';
import type { SqliteValue } from './driver.js';

// How SQLite locks, once, so the per-statement notes can be short: a database file has one writer
// at a time. BEGIN IMMEDIATE takes that write lock up front (waiting up to busy_timeout), so every
// read-then-write below runs against data no other connection or process can change until COMMIT;
// that is why no row locks or SKIP LOCKED are needed. Reads outside a transaction see the last
// committed snapshot (WAL) and never wait for the writer.

/** Starts a write transaction holding the database's single write lock from the first statement. */
export const BEGIN = 'BEGIN IMMEDIATE';
/** Makes the transaction durable (synced to disk under synchronous=FULL) and releases the write lock. */
export const COMMIT = 'COMMIT';
/** Undoes the transaction and releases the write lock. */
export const ROLLBACK = 'ROLLBACK';
/** Opens a group-commit batch's nested scope for one write, so that write can be undone alone. */
export const SAVEPOINT = 'SAVEPOINT readback_write';
/** Keeps one write's changes in the batch's transaction (they are durable only at its COMMIT). */
export const RELEASE = 'RELEASE readback_write';
/** Undoes one failed write inside a batch and leaves the rest of the transaction open. */
export const ROLLBACK_TO = 'ROLLBACK TO readback_write';

const OPERATION_COLUMNS = `id, schema_version, action, target, scope, fingerprint, idempotency_key, run_id,
  actor, input, attempt, lifecycle, status, requested_at, updated_at, executed_at, in_flight_until,
  accepted_at, last_observed_at, next_poll_at, reads, provider_ref, baseline, completion, lease_owner,
  lease_token, lease_expires_at`;

/** The operation columns in table (and `recordParams`) order. */
export const OPERATION_COLUMN_NAMES: readonly string[] = OPERATION_COLUMNS.split(',').map((c) => c.trim());

/** Reads one operation by id (snapshot read; inside reserve/transition it runs under the write lock). */
export const SELECT_BY_ID = `SELECT ${OPERATION_COLUMNS} FROM readback_operations WHERE id = ?`;

/**
 * Reads what a transition checks before its UPDATE (the identity fields and the lifecycle the event
 * starts from), without the JSON columns a full record would make us parse. Runs under the write lock.
 */
export const SELECT_IDENTITY = `SELECT id, schema_version, idempotency_key, fingerprint, lifecycle
  FROM readback_operations WHERE id = ?`;

/**
 * Reads only the lifecycle a transition moves from, for the event's `from` when the compare-and-set
 * allows several; runs under the write lock, so the UPDATE that follows sees the same row.
 */
export const SELECT_LIFECYCLE = 'SELECT lifecycle FROM readback_operations WHERE id = ?';

/** Reads one operation by idempotency key through the unique index (snapshot read, or under the write lock in reserve). */
export const SELECT_BY_KEY = `SELECT ${OPERATION_COLUMNS} FROM readback_operations WHERE idempotency_key = ?`;

/**
 * Inserts a reserved operation under the write lock, or does nothing when its idempotency key is taken
 * (0 changes); an id taken under another key still fails, on the primary key.
 */
export const INSERT_OPERATION = `INSERT INTO readback_operations (${OPERATION_COLUMNS})
  VALUES (${placeholders(OPERATION_COLUMNS.split(',').length)})
  ON CONFLICT (idempotency_key) DO NOTHING`;

/**
 * Builds the compare-and-set UPDATE for a transition: it writes `columns` only when the row is
 * still in one of `fromCount` lifecycles (never `settled`) and, when given, still holds the lease
 * token and attempt the writer saw. It runs under the write lock, so the WHERE is the whole check.
 * Parameters: column values, updated_at, id, the from lifecycles, then (checkLease, leaseToken) and
 * (checkAttempt, attempt), where a check flag of 0 leaves that guard out, then with `guardsStatus` the status
 * the writer saw (a separate text: the common writes bind nothing for it).
 */
export function updateOperationSql(
  columns: readonly string[],
  fromCount: number,
  guardsStatus = false,
): string {
  // Built once per shape and found again through a trie keyed by the column names (constants, so their
  // hashes are cached): a transition runs on every step of every action, and building this text (then
  // hashing it for the statement cache) each time was a measurable part of a fast action's cost.
  // Odd callers can order patch keys any way they like, so bound the trie rather than let it grow forever.
  if (shapeCount >= 1024) {
    updateShapes = columnTrie();
    shapeCount = 0;
  }
  const node = columnNode(updateShapes, columns);
  const slot = fromCount * 2 + (guardsStatus ? 1 : 0);
  let sql = node.values[slot];
  if (sql === undefined) {
    // Column names come only from PATCH_COLUMNS (rows.ts), never from a caller's data.
    const sets = [...columns.map((c) => `${c} = ?`), 'updated_at = ?'];
    sql = `UPDATE readback_operations SET ${sets.join(', ')}
    WHERE id = ? AND lifecycle IN (${placeholders(fromCount)}) AND lifecycle <> 'settled'
      AND (? = 0 OR lease_token IS ?) AND (? = 0 OR attempt IS ?)${guardsStatus ? ' AND status IS ?' : ''}
    RETURNING ${OPERATION_COLUMNS}`;
    node.values[slot] = sql;
    shapeCount++;
  }
  return sql;
}

// The UPDATE for each column list, by the number of lifecycles it may move from.
let updateShapes = columnTrie<string>();
let shapeCount = 0;

/** Appends one event with seq = the operation's next position; runs under the write lock, so no two writers get one seq. */
export const INSERT_EVENT = `INSERT INTO readback_events
  (operation_id, seq, schema_version, at, type, from_lifecycle, to_lifecycle, status, actor, attempt, detail)
  VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM readback_events WHERE operation_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** Reads an operation's event log in order (snapshot read over the primary key). */
export const SELECT_EVENTS = `SELECT operation_id, seq, schema_version, at, type, from_lifecycle, to_lifecycle,
  status, actor, attempt, detail FROM readback_events WHERE operation_id = ? ORDER BY seq`;

/** Builds the list query for a filter (one snapshot read; no lock). Order matches the memory store: requestedAt, then id. */
export function listSql(filter: ListFilter): { sql: string; params: SqliteValue[] } {
  const where: string[] = [];
  const params: SqliteValue[] = [];
  if (filter.status !== undefined) {
    // IS compares NULL as a value, so `status: null` finds records that have none yet.
    where.push('status IS ?');
    params.push(filter.status);
  }
  if (filter.lifecycle !== undefined) {
    const lifecycles = Array.isArray(filter.lifecycle) ? filter.lifecycle : [filter.lifecycle];
    where.push(`lifecycle IN (${placeholders(lifecycles.length)})`);
    params.push(...lifecycles);
  }
  if (filter.action !== undefined) {
    where.push('action = ?');
    params.push(filter.action);
  }
  if (filter.runId !== undefined) {
    where.push('run_id = ?');
    params.push(filter.runId);
  }
  if (filter.dueBefore !== undefined) {
    where.push('next_poll_at IS NOT NULL AND next_poll_at <= ?');
    params.push(filter.dueBefore);
  }
  let sql = `SELECT ${OPERATION_COLUMNS} FROM readback_operations`;
  if (where.length > 0) sql += ` WHERE ${where.join(' AND ')}`;
  sql += ' ORDER BY requested_at, id';
  if (filter.limit !== undefined) {
    sql += ' LIMIT ?';
    params.push(filter.limit);
  }
  return { sql, params };
}

/** The lifecycles a reconciler may claim: open ones, except those waiting for a person. */
export const CLAIMABLE_LIFECYCLES: readonly Lifecycle[] = OPEN_LIFECYCLES.filter(
  (l) => l !== 'awaiting_approval',
);

// One claimable lifecycle's due operations in claim order, at most `limit` of them. The due index is
// (lifecycle, next_poll_at), so this is one ordered walk that stops after `limit` rows (ties of next_poll_at
// sorted as they come). Parameters: now, now, the action names as a JSON array or null for any (twice), limit.
// With `actionTest` 'action = ?' it is one action's walk of (action, lifecycle, next_poll_at) instead; parameters:
// now, now, the action, limit.
const dueIn = (
  lifecycle: Lifecycle,
  actionTest = '(? IS NULL OR action IN (SELECT value FROM json_each(?)))',
) =>
  `SELECT * FROM (
    SELECT id, next_poll_at, requested_at FROM readback_operations
    WHERE lifecycle = '${lifecycle}' AND next_poll_at <= ?
      AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
      AND ${actionTest}
    ORDER BY next_poll_at, requested_at, id
    LIMIT ?)`;

/**
 * Selects up to `limit` due operations not under a live lease, in nextPollAt order; it runs first
 * in claimDue's write transaction, so the rows it picks cannot be claimed by anyone else before
 * CLAIM_ONE marks them. The first `limit` of each claimable lifecycle, then the first `limit` of those:
 * one query over all the lifecycles at once read and sorted every due row on each claim (12 ms per claim
 * of 32 with 20 000 due, against 0.6 ms). Parameters: `selectDueParams(now, actions, limit)`.
 */
export const SELECT_DUE = `SELECT id FROM (${CLAIMABLE_LIFECYCLES.map((lifecycle) => dueIn(lifecycle)).join(' UNION ALL ')})
  ORDER BY next_poll_at, requested_at, id
  LIMIT ?`;

/** SELECT_DUE's parameters: `actions` is the JSON array of action names, or null for any. */
export function selectDueParams(now: number, actions: string | null, limit: number): unknown[] {
  const params: unknown[] = [];
  for (let i = 0; i < CLAIMABLE_LIFECYCLES.length; i++) params.push(now, now, actions, actions, limit);
  params.push(limit);
  return params;
}

/**
 * SELECT_DUE for a claim naming `count` distinct actions (1 to MAX_CLAIM_ACTIONS): the first `limit` of each action
 * and claimable lifecycle, then the first `limit` of those. SELECT_DUE walks the due operations of every action in
 * time order and skips the others', so on a file shared with other services a claim read past all of theirs that
 * were due first. Parameters: `selectDueByActionParams(now, actions, limit)`.
 */
export function selectDueByActionSql(count: number): string {
  const known = byActionSql[count];
  if (known !== undefined) return known;
  const walks: string[] = [];
  for (let a = 0; a < count; a++)
    for (const lifecycle of CLAIMABLE_LIFECYCLES) walks.push(dueIn(lifecycle, 'action = ?'));
  const sql = `SELECT id FROM (${walks.join(' UNION ALL ')})
  ORDER BY next_poll_at, requested_at, id
  LIMIT ?`;
  byActionSql[count] = sql;
  return sql;
}
// The text for each count, built once: the store's statement cache is keyed by it.
const byActionSql: string[] = [];

/** The parameters of `selectDueByActionSql(actions.length)`; `actions` must be distinct. */
export function selectDueByActionParams(now: number, actions: readonly string[], limit: number): unknown[] {
  const params: unknown[] = [];
  for (const action of actions) {
    for (let i = 0; i < CLAIMABLE_LIFECYCLES.length; i++) params.push(now, now, action, limit);
  }
  params.push(limit);
  return params;
}

/** Writes a lease onto one selected row, under the same write lock as SELECT_DUE. Parameters: owner, token, expiry, now, id. */
export const CLAIM_ONE = `UPDATE readback_operations
  SET lease_owner = ?, lease_token = ?, lease_expires_at = ?, updated_at = ?
  WHERE id = ?
  RETURNING ${OPERATION_COLUMNS}`;

/**
 * Extends a lease while the token still matches and the operation is open, never shortening it; runs
 * under the write lock. No event: a heartbeat changes no state anyone reads back.
 * Parameters: new expiry, id, token.
 */
export const RENEW_LEASE = `UPDATE readback_operations
  SET lease_expires_at = MAX(COALESCE(lease_expires_at, 0), ?)
  WHERE id = ? AND lease_token = ? AND lifecycle <> 'settled'
  RETURNING lease_expires_at`;

function placeholders(count: number): string {
  return Array(count).fill('?').join(', ');
}

/**
 * Settled operations requested and last changed before ? (given twice), at most ? (retention). It walks the settled part of
 * readback_operations_due, whose rows all have no next poll, so in rowid order: the oldest inserted first.
 */
export const SELECT_PRUNABLE = `SELECT id FROM readback_operations
  WHERE lifecycle = 'settled' AND requested_at < ? AND updated_at < ? LIMIT ?`;

/** Deletes one operation's event log (by the primary key's prefix). */
export const DELETE_EVENTS = 'DELETE FROM readback_events WHERE operation_id = ?';

/** Deletes one operation, only while it is still settled and last changed before ?2. */
export const DELETE_SETTLED = `DELETE FROM readback_operations
  WHERE id = ? AND lifecycle = 'settled' AND updated_at < ?`;
