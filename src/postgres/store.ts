import { randomUUID } from 'node:crypto';
import { ReadbackError } from '../errors.js';
import {
  applyStart,
  boundJson,
  type EventRow,
  eventFromRow,
  type JsonTexts,
  type OperationRow,
  patchAssignments,
  recordFromRow,
  recordParams,
} from '../sqlite/rows.js';
import {
  actionsToWalk,
  IDENTITY_FIELDS,
  newRecord,
  pruneLimit,
  requireClaimArgs,
  requireEvent,
  requireKnownLifecycle,
  requirePositiveInt,
  requireRenewArgs,
  requireStorableOperation,
  requireStorableText,
  requireString,
  requireTime,
  storableText,
  unmatchableFilter,
} from '../store/records.js';
import {
  type Claim,
  type Lifecycle,
  type ListFilter,
  type NewEvent,
  type NewOperation,
  type OperationRecord,
  type OperationStore,
  RECORD_SCHEMA_VERSION,
  type RecordPatch,
  type ReserveStart,
  type TransitionGuard,
} from '../store/types.js';
import { RESERVE_KEY } from './batch.js';
import { isUniqueViolation, type PgQueryable } from './driver.js';
import {
  DETAIL_PARAM,
  INPUT_PARAM,
  pushEventValues,
  pushStartValues,
  refuseUnstorableJson,
  SCOPE_PARAM,
  startJson,
  WRITE_ID_PARAM,
  wholeMs,
} from './params.js';
import type { ReconnectPolicy } from './retry.js';
import { createSender, type Write, type WrittenRow } from './send.js';
import { transitionShapes } from './shapes.js';
import {
  claimDueByActionSql,
  isTimeColumn,
  listSql,
  MAX_LIMIT,
  RESERVE_TIME_PARAMS,
  reserveBatchSql,
  statementsFor,
  type Tables,
} from './sql.js';

/** Whose clock decides lease expiry and liveness: the database server's, or the `now` each caller passes. */
export type LeaseClock = 'database' | 'caller';

/** What the store needs besides the queryable: whether it owns (and so ends) the pool. */
export interface PgStoreBinding {
  db: PgQueryable;
  tables: Tables;
  /** Ends the pool readback created; absent for a caller's pool, which readback never closes. */
  end?: () => Promise<void>;
  /** Names the store in error messages. */
  label: string;
  /** Default 'database'. */
  leaseClock?: LeaseClock;
  /** Retries statements after connection errors; only for a pool readback owns (see `withReconnect`). */
  reconnect?: ReconnectPolicy;
  /** Sends statements as pg named prepared statements (see `PostgresStoreOptions.namedStatements`); default false here. */
  namedStatements?: boolean;
  /** Sends the reserves and transitions of one event-loop turn as one statement per shape (see `PostgresStoreOptions.groupCommit`); default false here. */
  groupCommit?: boolean;
}

/** What a reserve answers. */
type Reservation = { record: OperationRecord; created: boolean };

/** The `OperationStore` over a Postgres pool or client; every write is one atomic statement. */
export function createPostgresStore({
  db,
  tables,
  end,
  label,
  leaseClock = 'database',
  reconnect,
  namedStatements = false,
  groupCommit = false,
}: PgStoreBinding): OperationStore {
  const sql = statementsFor(tables);
  let reserveBatch: string | undefined;
  const reserveBatchText = () => {
    reserveBatch ??= reserveBatchSql(tables);
    return reserveBatch;
  };
  const shapeOf = transitionShapes(tables);
  const { rows, writeOnce, batcher } = createSender({
    db,
    selectWrite: sql.selectWrite,
    namedStatements,
    reconnect,
    groupCommit,
  });
  // The claim text for each count of named actions, built once.
  const claimByAction: string[] = [];
  let closed = false;

  const open = (method: string) => {
    if (closed) throw new ReadbackError('store_closed', `${label} is closed; cannot ${method}`);
  };

  // Whether the operation exists, after checking that the identity fields a patch carries match it.
  const identityHolds = async (
    id: string,
    patch: RecordPatch,
    carried: (typeof IDENTITY_FIELDS)[number][],
  ): Promise<boolean> => {
    const [row] = await rows<Record<string, unknown>>(sql.selectIdentity, [id]);
    if (row === undefined) return false;
    const current: Record<(typeof IDENTITY_FIELDS)[number], unknown> = {
      id: row.id,
      idempotencyKey: row.idempotency_key,
      fingerprint: row.fingerprint,
      schemaVersion: Number(row.schema_version),
    };
    for (const field of carried) {
      if ((patch as Partial<OperationRecord>)[field] !== current[field]) {
        throw new ReadbackError('store_conflict', `a transition cannot change ${field}`, `patch.${field}`);
      }
    }
    return true;
  };

  // The compare-and-set UPDATE and its event, as one statement (or a share of a group commit).
  const update = (
    id: string,
    from: readonly Lifecycle[],
    updatedAt: number,
    columns: string[],
    values: unknown[],
    json: JsonTexts | undefined,
    event: NewEvent,
    guard: TransitionGuard,
  ): Promise<OperationRecord | null> => {
    const { key, text, batchText } = shapeOf(
      columns,
      guard.leaseToken !== undefined,
      guard.attempt !== undefined,
      guard.status !== undefined,
    );
    const params = values;
    for (let i = 0; i < params.length; i++) {
      const value = params[i];
      if (typeof value === 'number' && !Number.isInteger(value) && isTimeColumn(columns[i]!)) {
        params[i] = wholeMs(value);
      }
    }
    params.unshift(id, from.slice(), wholeMs(updatedAt));
    if (guard.leaseToken !== undefined) params.push(guard.leaseToken);
    if (guard.attempt !== undefined) params.push(guard.attempt);
    if (guard.status !== undefined) params.push(guard.status);
    pushEventValues(params, event);
    params.push(randomUUID());
    // A batch matches its rows back to callers by id as Postgres returns it, so only string ids ride in one.
    const first =
      batcher && typeof id === 'string'
        ? () =>
            batcher.enqueue({
              key,
              text,
              batchText,
              params,
            })
        : undefined;
    // No row: the compare-and-set did not match (missing, wrong lifecycle, settled, lease or attempt moved on).
    // A write found after a lost connection answers with the record only while it is still the latest
    // change; otherwise null, and the caller re-reads as it does for any compare-and-set it lost.
    // The returned record's patched JSON fields are the values their texts were encoded from (no decode).
    const bound = json === undefined ? undefined : boundJson(json);
    const refine = (error: unknown): never => {
      const texts: [string, unknown][] = (json ?? []).map(([field, text]) => [`patch.${field}`, text]);
      texts.push(['event.detail', params.at(-2)]);
      refuseUnstorableJson(error, texts);
      throw error;
    };
    const written = writeOnce(
      {
        text,
        values: params,
        id,
        writeId: params.at(-1) as string,
        apply: ([updated]) => (updated === undefined ? null : recordFromRow(updated, bound)),
        found: (write) => (write.seq === write.event_seq ? recordFromRow(write, bound) : null),
      },
      first,
      refine,
    );
    return written;
  };

  // The record a reserve found under its key (perhaps committed a moment ago by another process, which
  // ON CONFLICT waited for); this new statement's snapshot sees it. Records are never deleted.
  const reservedBefore = async (key: string) => {
    const existing = await byKey(key);
    if (existing === null) {
      throw new ReadbackError('store_conflict', `idempotency key ${key} conflicted but is gone`);
    }
    return { record: existing, created: false };
  };

  const byKey = async (key: string) => {
    if (typeof key === 'string' && !storableText(key, true)) return null;
    const [row] = await rows<OperationRow>(sql.selectByKey, [key]);
    return row === undefined ? null : recordFromRow(row);
  };

  return {
    // With `start`, the row is inserted already moved and both events are appended by the same statement: a
    // run's reserve and its move to executing cost one round trip and one commit.
    reserve(op: NewOperation, event: NewEvent, start?: ReserveStart) {
      let values: unknown[];
      let record: OperationRecord;
      try {
        open('reserve');
        requireString(op.id, 'op.id');
        requireString(op.idempotencyKey, 'op.idempotencyKey');
        requireTime(op.requestedAt, 'op.requestedAt');
        requireEvent(event, true);
        requireStorableOperation(op, true);
        record = newRecord(op);
        if (start) applyStart(record, start, true);
        // Takes over `record`: its JSON fields become what their texts hold, for the record returned.
        values = recordParams(record);
        for (const i of RESERVE_TIME_PARAMS) {
          const value = values[i];
          if (typeof value === 'number' && !Number.isInteger(value)) values[i] = wholeMs(value);
        }
        pushEventValues(values, event);
        values.push(randomUUID());
        pushStartValues(values, start?.event);
      } catch (error) {
        return Promise.reject(error);
      }
      // Our own seq-1 event means the record is ours; otherwise ON CONFLICT found someone else's key.
      const created = (row: OperationRow) => ({ record: recordFromRow(row, record), created: true });
      const write: Write<Reservation> = {
        text: sql.reserve,
        values,
        id: op.id,
        writeId: values[WRITE_ID_PARAM] as string,
        apply: ([inserted]) =>
          inserted !== undefined ? created(inserted) : reservedBefore(op.idempotencyKey),
        found: created,
      };
      // With group commit, reserves made in one turn (runs started together) go as one statement.
      const first = batcher
        ? () =>
            batcher.enqueue({
              key: RESERVE_KEY,
              text: sql.reserve,
              batchText: reserveBatchText,
              params: values,
            })
        : undefined;
      const written = writeOnce(write, first, (error) => {
        refuseUnstorableJson(error, [
          ['op.scope', values[SCOPE_PARAM]],
          ['op.input', values[INPUT_PARAM]],
          ['event.detail', values[DETAIL_PARAM]],
          ...startJson(start, values),
        ]);
        // ON CONFLICT names only the key, so a reused id under a new key still violates the primary key.
        if (isUniqueViolation(error, 'operations_pkey')) {
          throw new ReadbackError(
            'store_conflict',
            `operation ${op.id} already exists under a different idempotency key`,
            'op.id',
          );
        }
        throw error;
      });
      return written;
    },

    transition(id, from, patch, event, guard = {}) {
      try {
        open('transition');
        requireEvent(event, true);
        requireKnownLifecycle(patch);
        // The type forbids identity fields, but a spread record can still carry them at run time. They
        // never change once written, so checking them with a snapshot read before the UPDATE is exact.
        const carried: (typeof IDENTITY_FIELDS)[number][] = [];
        for (const field of IDENTITY_FIELDS) {
          if ((patch as Partial<OperationRecord>)[field] !== undefined) carried.push(field);
        }
        const { columns, values, json } = patchAssignments(patch, 'updatedAt', true);
        // An id Postgres cannot hold names no record (and would fail the statement): nothing to move.
        const write = () =>
          from.length === 0 || (typeof id === 'string' && !storableText(id, true))
            ? Promise.resolve(null)
            : update(id, from, patch.updatedAt ?? event.at, columns, values, json, event, guard);
        if (carried.length === 0) return write();
        return identityHolds(id, patch, carried).then((exists) => (exists ? write() : null));
      } catch (error) {
        return Promise.reject(error);
      }
    },

    async get(id) {
      open('get');
      if (typeof id === 'string' && !storableText(id, true)) return null;
      const [row] = await rows<OperationRow>(sql.selectById, [id]);
      return row === undefined ? null : recordFromRow(row);
    },

    async getByKey(idempotencyKey) {
      open('getByKey');
      return byKey(idempotencyKey);
    },

    async events(id) {
      open('events');
      if (typeof id === 'string' && !storableText(id, true)) return [];
      return (await rows<EventRow>(sql.selectEvents, [id])).map(eventFromRow);
    },

    async list(filter: ListFilter = {}) {
      open('list');
      if (filter.limit !== undefined) requirePositiveInt(filter.limit, 'filter.limit');
      if (filter.dueBefore !== undefined) requireTime(filter.dueBefore, 'filter.dueBefore');
      if (unmatchableFilter(filter, true)) return [];
      const { text, values } = listSql(tables, filter);
      return (await rows<OperationRow>(text, values)).map((row) => recordFromRow(row));
    },

    async claimDue(limit, leaseMs, owner, now, options) {
      open('claimDue');
      const actions = requireClaimArgs(limit, leaseMs, owner, now, options);
      // Recorded on every claimed row and its event: refused here rather than as pg's encoding error.
      requireStorableText(owner, 'owner', true);

      // Due-ness uses the caller's `now` (it wrote next_poll_at from its clock); the lease uses the lease clock.
      // A stored (whole-millisecond) time is at or before `now` exactly when it is at or before floor(now).
      const at = Math.floor(now);
      const params: unknown[] = [
        at,
        Math.min(limit, MAX_LIMIT),
        owner,
        leaseMs,
        RECORD_SCHEMA_VERSION,
        leaseClock === 'caller' ? at : null,
      ];
      const named = actionsToWalk(actions);
      let claim = sql.claimDue;
      if (named) {
        claim = claimByAction[named.length] ??= claimDueByActionSql(tables, named.length);
        params.push(...named);
      } else {
        params.push(actions === undefined ? null : [...actions]);
      }
      const claimed = await rows<WrittenRow>(claim, params);
      return claimed.map((row): Claim => {
        const record = recordFromRow(row);
        return { record, leaseToken: record.leaseToken!, leaseExpiresAt: record.leaseExpiresAt! };
      });
    },

    async renewLease(id, leaseToken, leaseMs, now) {
      open('renewLease');
      requireRenewArgs(id, leaseToken, leaseMs, now);
      const [row] = await rows<{ lease_expires_at: number }>(sql.renewLease, [
        id,
        leaseToken,
        leaseMs,
        leaseClock === 'caller' ? wholeMs(now) : null,
      ]);
      return row === undefined ? null : row.lease_expires_at;
    },

    async prune(options) {
      open('prune');
      const limit = pruneLimit(options);
      // Times are whole milliseconds here: a stored time is before x exactly when it is before ceil(x).
      // Retried after a lost connection like a read: a retry is another prune of what is left (the count then
      // misses rows a lost first try deleted, which nobody needs exactly).
      const [row] = await rows<{ deleted: number }>(sql.prune, [Math.ceil(options.settledBefore), limit]);
      return row?.deleted ?? 0;
    },

    async close() {
      // Closing twice is harmless, so shutdown paths need no bookkeeping of their own.
      if (closed) return;
      closed = true;
      // Transitions called before close still commit, and their callers hear how it went.
      await batcher?.drain();
      // Whoever created the pool ends it: a pool the caller passed in stays open.
      await end?.();
    },
  };
}
