import { ReadbackError } from '../errors.js';
import {
  type EventRow,
  eventFromRow,
  type OperationRow,
  patchAssignments,
  recordFromRow,
  recordParams,
} from '../sqlite/rows.js';
import {
  IDENTITY_FIELDS,
  newRecord,
  requireClaimArgs,
  requireEvent,
  requireKnownLifecycle,
  requirePositiveInt,
  requireString,
  requireTime,
} from '../store/records.js';
import {
  type Claim,
  type ListFilter,
  type NewEvent,
  type NewOperation,
  type OperationRecord,
  type OperationStore,
  RECORD_SCHEMA_VERSION,
} from '../store/types.js';
import { isUniqueViolation, type PgQueryable } from './driver.js';
import { listSql, statementsFor, type Tables, transitionSql } from './sql.js';

/** What the store needs besides the queryable: whether it owns (and so ends) the pool. */
export interface PgStoreBinding {
  db: PgQueryable;
  tables: Tables;
  /** Ends the pool readback created; absent for a caller's pool, which readback never closes. */
  end?: () => Promise<void>;
  /** Names the store in error messages. */
  label: string;
}

/** The row CTE statements return: an operation row plus the seq of the event just appended. */
type WrittenRow = OperationRow & { event_seq?: number };

/** The `OperationStore` over a Postgres pool or client; every write is one atomic statement. */
export function createPostgresStore({ db, tables, end, label }: PgStoreBinding): OperationStore {
  const sql = statementsFor(tables);
  let closed = false;

  const open = (method: string) => {
    if (closed) throw new ReadbackError('store_closed', `${label} is closed; cannot ${method}`);
  };

  // A pg.Pool runs queries on many connections at once; a single client (pg.Client) must get them
  // one at a time (pg@8 queues them with a deprecation warning, pg@9 will refuse), so queue them here.
  const serial = typeof (db as { totalCount?: unknown }).totalCount !== 'number';
  let tail: Promise<unknown> = Promise.resolve();
  const query = (text: string, values: unknown[]) => {
    if (!serial) return db.query(text, values);
    const run = tail.then(() => db.query(text, values));
    tail = run.catch(() => undefined);
    return run;
  };

  const rows = async <Row>(text: string, values: unknown[]): Promise<Row[]> =>
    (await query(text, values)).rows as Row[];

  const eventValues = (event: NewEvent): unknown[] => [
    RECORD_SCHEMA_VERSION,
    event.at,
    event.type,
    event.status ?? null,
    event.actor ?? null,
    event.attempt,
    // SQL NULL for "absent", so a given `null` (JSON 'null') still reads back as given.
    event.detail === undefined ? null : (JSON.stringify(event.detail) ?? null),
  ];

  const byKey = async (key: string) => {
    const [row] = await rows<OperationRow>(sql.selectByKey, [key]);
    return row === undefined ? null : recordFromRow(row);
  };

  return {
    async reserve(op: NewOperation, event: NewEvent) {
      open('reserve');
      requireString(op.id, 'op.id');
      requireString(op.idempotencyKey, 'op.idempotencyKey');
      requireTime(op.requestedAt, 'op.requestedAt');
      requireEvent(event);

      const record = newRecord(op);
      let inserted: OperationRow[];
      try {
        inserted = await rows<OperationRow>(sql.reserve, [...recordParams(record), ...eventValues(event)]);
      } catch (error) {
        // ON CONFLICT names only the key, so a reused id under a new key still violates the primary key.
        if (isUniqueViolation(error, 'operations_pkey')) {
          throw new ReadbackError(
            'store_conflict',
            `operation ${op.id} already exists under a different idempotency key`,
            'op.id',
          );
        }
        throw error;
      }
      if (inserted[0] !== undefined) return { record: recordFromRow(inserted[0]), created: true };
      // The key exists (perhaps committed a moment ago by another process, which ON CONFLICT waited
      // for); this new statement's snapshot sees it. Records are never deleted, so it is there.
      const existing = await byKey(op.idempotencyKey);
      if (existing === null) {
        throw new ReadbackError(
          'store_conflict',
          `idempotency key ${op.idempotencyKey} conflicted but is gone`,
        );
      }
      return { record: existing, created: false };
    },

    async transition(id, from, patch, event, guard = {}) {
      open('transition');
      requireEvent(event);
      requireKnownLifecycle(patch);
      const { updatedAt, ...rest } = patch;
      const { columns, values } = patchAssignments(rest);

      // The type forbids identity fields, but a spread record can still carry them at run time. They
      // never change once written, so checking them with a snapshot read before the UPDATE is exact.
      const carried = IDENTITY_FIELDS.filter((f) => (patch as Partial<OperationRecord>)[f] !== undefined);
      if (carried.length > 0) {
        const [row] = await rows<Record<string, unknown>>(sql.selectIdentity, [id]);
        if (row === undefined) return null;
        const current: Record<(typeof IDENTITY_FIELDS)[number], unknown> = {
          id: row.id,
          idempotencyKey: row.idempotency_key,
          fingerprint: row.fingerprint,
          schemaVersion: Number(row.schema_version),
        };
        for (const field of carried) {
          if ((patch as Partial<OperationRecord>)[field] !== current[field]) {
            throw new ReadbackError(
              'store_conflict',
              `a transition cannot change ${field}`,
              `patch.${field}`,
            );
          }
        }
      }
      if (from.length === 0) return null;

      const text = transitionSql(tables, columns, {
        leaseToken: guard.leaseToken !== undefined,
        attempt: guard.attempt !== undefined,
      });
      const params: unknown[] = [id, [...from], updatedAt ?? event.at, ...values];
      if (guard.leaseToken !== undefined) params.push(guard.leaseToken);
      if (guard.attempt !== undefined) params.push(guard.attempt);
      params.push(...eventValues(event));
      const [updated] = await rows<WrittenRow>(text, params);
      // No row: the compare-and-set did not match (missing, wrong lifecycle, settled, lease or attempt moved on).
      return updated === undefined ? null : recordFromRow(updated);
    },

    async get(id) {
      open('get');
      const [row] = await rows<OperationRow>(sql.selectById, [id]);
      return row === undefined ? null : recordFromRow(row);
    },

    async getByKey(idempotencyKey) {
      open('getByKey');
      return byKey(idempotencyKey);
    },

    async events(id) {
      open('events');
      return (await rows<EventRow>(sql.selectEvents, [id])).map(eventFromRow);
    },

    async list(filter: ListFilter = {}) {
      open('list');
      if (filter.limit !== undefined) requirePositiveInt(filter.limit, 'filter.limit');
      if (filter.dueBefore !== undefined) requireTime(filter.dueBefore, 'filter.dueBefore');
      const { text, values } = listSql(tables, filter);
      return (await rows<OperationRow>(text, values)).map(recordFromRow);
    },

    async claimDue(limit, leaseMs, owner, now) {
      open('claimDue');
      requireClaimArgs(limit, leaseMs, owner, now);

      // `now` is the caller's clock for now (the conformance suite uses fixed times); issue 4 takes
      // due and expiry times from the database clock instead.
      const leaseExpiresAt = now + leaseMs;
      const claimed = await rows<WrittenRow>(sql.claimDue, [
        now,
        limit,
        owner,
        leaseExpiresAt,
        RECORD_SCHEMA_VERSION,
      ]);
      return claimed.map((row): Claim => {
        const record = recordFromRow(row);
        return { record, leaseToken: record.leaseToken!, leaseExpiresAt };
      });
    },

    async close() {
      // Closing twice is harmless, so shutdown paths need no bookkeeping of their own.
      if (closed) return;
      closed = true;
      // Whoever created the pool ends it: a pool the caller passed in stays open.
      await end?.();
    },
  };
}

// These columns are NOT NULL, so say which field is wrong instead of surfacing a constraint error.
