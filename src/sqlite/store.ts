import { randomUUID } from 'node:crypto';
import { ReadbackError } from '../errors.js';
import {
  type Claim,
  type Lifecycle,
  type ListFilter,
  type NewEvent,
  type NewOperation,
  OPEN_LIFECYCLES,
  type OperationRecord,
  type OperationStore,
  RECORD_SCHEMA_VERSION,
} from '../store/types.js';
import type { SqliteLike, SqliteStatement, SqliteValue } from './driver.js';
import {
  type EventRow,
  eventFromRow,
  eventParams,
  type OperationRow,
  patchAssignments,
  recordFromRow,
  recordParams,
} from './rows.js';
import { rollbackQuietly } from './schema.js';
import {
  BEGIN,
  CLAIM_ONE,
  COMMIT,
  INSERT_EVENT,
  INSERT_OPERATION,
  listSql,
  SELECT_BY_ID,
  SELECT_BY_KEY,
  SELECT_DUE,
  SELECT_EVENTS,
  updateOperationSql,
} from './sql.js';

const LIFECYCLES: readonly Lifecycle[] = [...OPEN_LIFECYCLES, 'settled'];
const IDENTITY_FIELDS = ['id', 'idempotencyKey', 'fingerprint', 'schemaVersion'] as const;
const MAX_CACHED_STATEMENTS = 256;

/** What the store needs besides the handle: whether it owns (and so closes) the connection. */
export interface StoreBinding {
  db: SqliteLike;
  owned: boolean;
  /** Names the store in error messages ("sqlite store at .readback/ops.db"). */
  label: string;
}

/**
 * The `OperationStore` over a prepared SQLite connection. Every method runs its SQL synchronously
 * (both drivers are synchronous), so calls on one connection never interleave; writes take
 * BEGIN IMMEDIATE so calls from other connections and processes serialize on the file's write lock.
 */
export function createSqliteStore({ db, owned, label }: StoreBinding): OperationStore {
  let closed = false;
  // Prepared once per SQL text: the dynamic UPDATE and list shapes repeat, and preparing is the
  // costliest part of a small statement.
  const statements = new Map<string, SqliteStatement>();
  const stmt = (sql: string): SqliteStatement => {
    let prepared = statements.get(sql);
    if (prepared === undefined) {
      // Patches vary in shape, so bound the cache rather than let odd callers grow it forever.
      if (statements.size >= MAX_CACHED_STATEMENTS) statements.clear();
      prepared = db.prepare(sql);
      statements.set(sql, prepared);
    }
    return prepared;
  };

  const open = (method: string) => {
    if (closed) throw new ReadbackError('store_closed', `${label} is closed; cannot ${method}`);
  };

  const write = <T>(body: () => T): T => {
    // Our BEGIN would fail inside a caller's transaction, and nesting would also make our records
    // only as durable as the caller's eventual COMMIT; a record must be on disk before execute runs.
    if (db.inTransaction === true || db.isTransaction === true) {
      throw new ReadbackError(
        'store_conflict',
        `${label}: the database handle is inside a transaction; readback commits its own records`,
      );
    }
    stmt(BEGIN).run();
    try {
      const result = body();
      stmt(COMMIT).run();
      return result;
    } catch (error) {
      rollbackQuietly(db);
      throw error;
    }
  };

  const rowById = (id: string) => stmt(SELECT_BY_ID).get(id) as OperationRow | undefined;

  const appendEvent = (
    record: OperationRecord,
    event: NewEvent,
    from: Lifecycle | null,
    to: Lifecycle | null,
  ) => {
    stmt(INSERT_EVENT).run(...eventParams(record.id, RECORD_SCHEMA_VERSION, event, from, to));
  };

  return {
    async reserve(op: NewOperation, event: NewEvent) {
      open('reserve');
      requireString(op.id, 'op.id');
      requireString(op.idempotencyKey, 'op.idempotencyKey');
      requireTime(op.requestedAt, 'op.requestedAt');
      requireEvent(event);

      // Records are never deleted, so a key found without the lock is final: a repeated request
      // (the common retry) answers from a snapshot read and never waits for the writer.
      const known = stmt(SELECT_BY_KEY).get(op.idempotencyKey) as OperationRow | undefined;
      if (known !== undefined) return { record: recordFromRow(known), created: false };

      return write(() => {
        // Checked again under the write lock: another connection may have reserved the key since.
        const existing = stmt(SELECT_BY_KEY).get(op.idempotencyKey) as OperationRow | undefined;
        if (existing !== undefined) return { record: recordFromRow(existing), created: false };
        if (rowById(op.id) !== undefined) {
          throw new ReadbackError(
            'store_conflict',
            `operation ${op.id} already exists under a different idempotency key`,
            'op.id',
          );
        }
        const record: OperationRecord = {
          schemaVersion: RECORD_SCHEMA_VERSION,
          id: op.id,
          action: op.action,
          target: op.target,
          scope: op.scope,
          fingerprint: op.fingerprint,
          idempotencyKey: op.idempotencyKey,
          runId: op.runId,
          actor: op.actor ?? null,
          input: op.input,
          attempt: 0,
          lifecycle: 'requested',
          status: null,
          requestedAt: op.requestedAt,
          updatedAt: op.requestedAt,
          executedAt: null,
          inFlightUntil: null,
          acceptedAt: null,
          lastObservedAt: null,
          nextPollAt: null,
          reads: 0,
          providerRef: null,
          baseline: null,
          completion: null,
          leaseOwner: null,
          leaseToken: null,
          leaseExpiresAt: null,
        };
        stmt(INSERT_OPERATION).run(...recordParams(record));
        appendEvent(record, event, null, 'requested');
        // Read back what was stored rather than echo the caller's objects: the result is then a
        // copy by construction and shows exactly what JSON kept.
        return { record: recordFromRow(rowById(op.id)!), created: true };
      });
    },

    async transition(id, from, patch, event, guard = {}) {
      open('transition');
      requireEvent(event);
      if (patch.lifecycle !== undefined && !LIFECYCLES.includes(patch.lifecycle)) {
        throw new ReadbackError(
          'invalid_options',
          `unknown lifecycle "${String(patch.lifecycle)}"`,
          'patch.lifecycle',
        );
      }
      const { updatedAt, ...rest } = patch;
      const { columns, values } = patchAssignments(rest);

      return write(() => {
        // Read under the write lock: the identity check and the event's `from` need the current row,
        // and nothing can change it between this read and the UPDATE below.
        const currentRow = rowById(id);
        if (currentRow === undefined) return null;
        const current = recordFromRow(currentRow);
        // The type forbids identity fields, but a spread record can still carry them at run time.
        for (const field of IDENTITY_FIELDS) {
          const value = (patch as Partial<OperationRecord>)[field];
          if (value !== undefined && value !== current[field]) {
            throw new ReadbackError(
              'store_conflict',
              `a transition cannot change ${field}`,
              `patch.${field}`,
            );
          }
        }
        if (from.length === 0) return null;

        const params: SqliteValue[] = [
          ...values,
          updatedAt ?? event.at,
          id,
          ...from,
          guard.leaseToken === undefined ? 0 : 1,
          guard.leaseToken ?? null,
          guard.attempt === undefined ? 0 : 1,
          guard.attempt ?? null,
        ];
        const row = stmt(updateOperationSql(columns, from.length)).get(...params) as OperationRow | undefined;
        // No row: the compare-and-set did not match (wrong lifecycle, settled, lease or attempt moved on).
        if (row === undefined) return null;
        const next = recordFromRow(row);
        appendEvent(next, event, current.lifecycle, next.lifecycle);
        return next;
      });
    },

    async get(id) {
      open('get');
      const row = rowById(id);
      return row === undefined ? null : recordFromRow(row);
    },

    async getByKey(idempotencyKey) {
      open('getByKey');
      const row = stmt(SELECT_BY_KEY).get(idempotencyKey) as OperationRow | undefined;
      return row === undefined ? null : recordFromRow(row);
    },

    async events(id) {
      open('events');
      return (stmt(SELECT_EVENTS).all(id) as EventRow[]).map(eventFromRow);
    },

    async list(filter: ListFilter = {}) {
      open('list');
      if (filter.limit !== undefined) requirePositiveInt(filter.limit, 'filter.limit');
      if (filter.dueBefore !== undefined) requireTime(filter.dueBefore, 'filter.dueBefore');
      const { sql, params } = listSql(filter);
      return (stmt(sql).all(...params) as OperationRow[]).map(recordFromRow);
    },

    async claimDue(limit, leaseMs, owner, now) {
      open('claimDue');
      requirePositiveInt(limit, 'limit');
      if (typeof leaseMs !== 'number' || !Number.isFinite(leaseMs) || leaseMs <= 0) {
        throw new ReadbackError('invalid_options', 'must be a positive number of milliseconds', 'leaseMs');
      }
      requireString(owner, 'owner');
      requireTime(now, 'now');

      // One write transaction for the select and the leases: SQLite has a single writer per file,
      // so a second claimer (another connection or process) waits on BEGIN and then sees these
      // leases as live; that is what Postgres needs FOR UPDATE SKIP LOCKED for.
      return write(() => {
        const due = stmt(SELECT_DUE).all(now, now, limit) as { id: string }[];
        const leaseExpiresAt = now + leaseMs;
        return due.map(({ id }): Claim => {
          const leaseToken = randomUUID();
          const row = stmt(CLAIM_ONE).get(owner, leaseToken, leaseExpiresAt, now, id) as OperationRow;
          const record = recordFromRow(row);
          // The token is a write capability, so the log names the owner but never the token.
          appendEvent(
            record,
            {
              at: now,
              type: 'claimed',
              from: record.lifecycle,
              to: record.lifecycle,
              status: record.status,
              actor: owner,
              attempt: record.attempt,
              detail: { owner, leaseExpiresAt },
            },
            record.lifecycle,
            record.lifecycle,
          );
          return { record, leaseToken, leaseExpiresAt };
        });
      });
    },

    async close() {
      // Closing twice is harmless, so shutdown paths need no bookkeeping of their own.
      if (closed) return;
      closed = true;
      statements.clear();
      // Whoever opened the connection closes it: a handle the caller passed in stays open.
      if (owned) db.close();
    },
  };
}

function requireString(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ReadbackError('invalid_options', 'must be a non-empty string', field);
  }
}

function requireTime(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ReadbackError('invalid_options', 'must be a finite number of milliseconds', field);
  }
}

function requirePositiveInt(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new ReadbackError('invalid_options', 'must be a positive integer', field);
  }
}

// The memory store keeps whatever an event holds; these columns are NOT NULL, so say which field
// is wrong instead of surfacing a driver constraint error.
function requireEvent(event: NewEvent): void {
  requireTime(event.at, 'event.at');
  requireString(event.type, 'event.type');
  if (typeof event.attempt !== 'number' || !Number.isFinite(event.attempt)) {
    throw new ReadbackError('invalid_options', 'must be a finite number', 'event.attempt');
  }
}
