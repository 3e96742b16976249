import { randomUUID } from 'node:crypto';
import { ReadbackError } from '../errors.js';
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
  requireUnchangedIdentity,
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
import { prepareArrays, type SqliteLike, type SqliteStatement, type SqliteValue } from './driver.js';
import {
  applyStart,
  boundJson,
  type EventRow,
  eventFromRow,
  eventParams,
  patchAssignments,
  recordFromValues,
  recordParams,
} from './rows.js';
import { bindsWholeText } from './schema.js';
import {
  CLAIM_ONE,
  DELETE_EVENTS,
  DELETE_SETTLED,
  INSERT_EVENT,
  INSERT_OPERATION,
  listSql,
  OPERATION_COLUMN_NAMES,
  RENEW_LEASE,
  SELECT_BY_ID,
  SELECT_BY_KEY,
  SELECT_DUE,
  SELECT_EVENTS,
  SELECT_IDENTITY,
  SELECT_LIFECYCLE,
  SELECT_PRUNABLE,
  selectDueByActionParams,
  selectDueByActionSql,
  selectDueParams,
  updateOperationSql,
} from './sql.js';
import { createWriter } from './writer.js';

const MAX_CACHED_STATEMENTS = 256;

/** What the store needs besides the handle: whether it owns (and so closes) the connection. */
export interface StoreBinding {
  db: SqliteLike;
  owned: boolean;
  /** Names the store in error messages ("sqlite store at .readback/ops.db"). */
  label: string;
  /** Coalesce concurrent writes into shared transactions (default true); see `SqliteStoreOptions.groupCommit`. */
  groupCommit?: boolean;
}

/** What SELECT_IDENTITY returns. */
interface IdentityRow {
  id: string;
  schema_version: number | bigint;
  idempotency_key: string;
  fingerprint: string;
  lifecycle: string;
}

const reserveEnded = (value: unknown) =>
  (value as { record: OperationRecord }).record.lifecycle === 'settled';
const transitionEnded = (value: unknown) => (value as OperationRecord | null)?.lifecycle === 'settled';

/**
 * The `OperationStore` over a prepared SQLite connection. Both drivers are synchronous, so SQL on
 * one connection never interleaves; writes take BEGIN IMMEDIATE so calls from other connections and
 * processes serialize on the file's write lock. Every write goes through `createWriter` (writer.ts): group
 * commit by default, and nothing resolves before its COMMIT returns, so an acknowledged write is as durable as
 * `durability` promises.
 */
export function createSqliteStore({ db, owned, label, groupCommit = true }: StoreBinding): OperationStore {
  let closed = false;
  // Prepared once per SQL text: the dynamic UPDATE and list shapes repeat, and preparing is the
  // costliest part of a small statement.
  const stmt = preparedOnce((sql): SqliteStatement => db.prepare(sql));
  // Statements that return operation rows, kept apart because their rows come back as arrays (see `prepareArrays`).
  const rows = preparedOnce((sql) => prepareArrays(db, sql, OPERATION_COLUMN_NAMES));

  const open = (method: string) => {
    if (closed) throw new ReadbackError('store_closed', `${label} is closed; cannot ${method}`);
  };
  // A handle that binds text only up to a NUL (node:sqlite) would store such text cut short, and a lookup by it
  // could find another record: as on Postgres, it is refused, and a lookup by it finds nothing.
  const nul = !bindsWholeText(db);
  const findable = (text: unknown) => !nul || typeof text !== 'string' || storableText(text, true);

  const { write, flush, queued, lone, inTransaction } = createWriter({ db, stmt, label, groupCommit });

  const rowById = (id: string) => rows(SELECT_BY_ID).get(id);

  const appendEvent = (
    record: OperationRecord,
    event: NewEvent,
    from: Lifecycle | null,
    to: Lifecycle | null,
  ) => {
    stmt(INSERT_EVENT).run(...eventParams(record.id, RECORD_SCHEMA_VERSION, event, from, to));
  };

  // The bodies of `reserve` and `transition`; they may throw, and the methods below turn that into a rejection.
  const reserve = (
    op: NewOperation,
    event: NewEvent,
    start?: ReserveStart,
  ): Promise<{ record: OperationRecord; created: boolean }> => {
    open('reserve');
    requireString(op.id, 'op.id');
    requireString(op.idempotencyKey, 'op.idempotencyKey');
    requireTime(op.requestedAt, 'op.requestedAt');
    requireEvent(event, nul);
    requireStorableOperation(op, nul);
    // The first transition rides in the reserve's INSERT: the row is created already moved (both events
    // appended), one statement and one commit. Checked here, so a refused start writes nothing.
    const record = newRecord(op);
    if (start) applyStart(record, start, nul);

    // Records are never deleted, so a key found without the lock is final: a repeated request
    // (the common retry) answers from a snapshot read and never waits for the batch or its commit.
    // Only with no write queued, though: a queued transition of that record must show in the answer.
    // A lone writer skips it: its write runs at once (waiting only if another process holds the
    // write lock), and its INSERT checks the key anyway.
    const solo = { id: op.id, ends: reserveEnded };
    if (queued() === 0 && !lone(solo)) {
      const known = rows(SELECT_BY_KEY).get(op.idempotencyKey);
      if (known !== undefined) return Promise.resolve({ record: recordFromValues(known), created: false });
    }

    // Takes over `record`: its JSON fields become what their texts hold, so it is the record returned. Bound
    // once, outside the write, so a write run again (see `flush`) binds the same.
    const params = recordParams(record);
    return write(() => {
      // The key is checked by the INSERT itself, under the write lock (another connection may have
      // reserved it since the snapshot read above): no change means it is taken, and it is final.
      let changes: number | bigint;
      try {
        changes = stmt(INSERT_OPERATION).run(...params).changes;
      } catch (error) {
        // The id is taken: by this same key (a repeat) or by another (a conflict). Anything else,
        // or a read that fails too, surfaces as the INSERT's own error; so does an error after which SQLite
        // ended the transaction (an answer read outside it would not be this write's).
        if (!inTransaction()) throw error;
        let taken: { record: OperationRecord; created: false } | 'id' | undefined;
        try {
          const existing = rows(SELECT_BY_KEY).get(op.idempotencyKey);
          if (existing !== undefined) taken = { record: recordFromValues(existing), created: false };
          else if (rowById(op.id) !== undefined) taken = 'id';
        } catch {
          throw error;
        }
        if (taken === undefined) throw error;
        if (taken !== 'id') return taken;
        throw new ReadbackError(
          'store_conflict',
          `operation ${op.id} already exists under a different idempotency key`,
          'op.id',
        );
      }
      if (Number(changes) === 0) {
        const existing = rows(SELECT_BY_KEY).get(op.idempotencyKey)!;
        return { record: recordFromValues(existing), created: false };
      }
      appendEvent(record, event, null, 'requested');
      if (start) appendEvent(record, start.event, 'requested', record.lifecycle);
      // Answer with what the row holds, the record the values were bound from rather than a read back
      // (materializing a 27-column row costs more than the INSERT): `recordParams` made its JSON fields what
      // their texts hold, never the caller's own objects.
      return { record, created: true };
    }, solo);
  };

  // Checks a transition's arguments and returns the body that applies it, to run inside a write: the new
  // record, or null when the compare-and-set did not match.
  const prepareTransition = (
    id: string,
    from: readonly Lifecycle[],
    patch: RecordPatch,
    event: NewEvent,
    guard: TransitionGuard,
  ): (() => OperationRecord | null) => {
    requireEvent(event, nul);
    requireKnownLifecycle(patch);
    const { columns, values, json } = patchAssignments(patch, 'updatedAt', nul);
    const updatedAt = patch.updatedAt ?? event.at;
    // The returned record's patched JSON fields are the values their texts were encoded from: decoding the
    // row's copy after the statement (and its fsync) would cost several times more.
    const bound = json === undefined ? undefined : boundJson(json);

    // A spread record can carry identity fields at run time although the type forbids them; only
    // then does the transition need the stored identity before its UPDATE.
    let checksIdentity = false;
    for (const field of IDENTITY_FIELDS) {
      if ((patch as Partial<OperationRecord>)[field] !== undefined) checksIdentity = true;
    }

    // An id or lease token this handle cannot bind whole names no row here (see `findable`).
    const unmatchable = !findable(id) || !findable(guard.leaseToken);
    return () => {
      if (unmatchable) return null;
      // The event's `from` is the lifecycle the UPDATE moved from. With one allowed lifecycle a match
      // proves it; with several (or an identity check) it is read first, under the write lock, so
      // nothing can change the row between this read and the UPDATE below.
      let was: Lifecycle | undefined = from.length === 1 ? from[0] : undefined;
      if (checksIdentity) {
        const row = stmt(SELECT_IDENTITY).get(id) as IdentityRow | undefined;
        if (row === undefined) return null;
        const current = {
          id: row.id,
          schemaVersion: Number(row.schema_version),
          idempotencyKey: row.idempotency_key,
          fingerprint: row.fingerprint,
        };
        requireUnchangedIdentity(patch, current);
        was = row.lifecycle as Lifecycle;
      } else if (was === undefined && from.length > 0) {
        const row = stmt(SELECT_LIFECYCLE).get(id) as { lifecycle: string } | undefined;
        if (row === undefined) return null;
        was = row.lifecycle as Lifecycle;
      }
      if (from.length === 0) return null;

      const params: SqliteValue[] = [
        ...values,
        updatedAt,
        id,
        ...from,
        guard.leaseToken === undefined ? 0 : 1,
        guard.leaseToken ?? null,
        guard.attempt === undefined ? 0 : 1,
        guard.attempt ?? null,
      ];
      const guardsStatus = guard.status !== undefined;
      if (guardsStatus) params.push(guard.status ?? null);
      const updated = rows(updateOperationSql(columns, from.length, guardsStatus)).get(...params);
      // No row: the compare-and-set did not match (wrong lifecycle, settled, lease or attempt moved on).
      if (updated === undefined) return null;
      const next = recordFromValues(updated, bound);
      appendEvent(next, event, was!, next.lifecycle);
      return next;
    };
  };

  const transition: OperationStore['transition'] = (id, from, patch, event, guard = {}) => {
    open('transition');
    return write(prepareTransition(id, from, patch, event, guard), { id, ends: transitionEnded });
  };

  return {
    // Not async: an async method that returns a promise costs one more promise and two more turns, on every
    // write. A throw still becomes a rejection, as it would in an async method.
    reserve(op: NewOperation, event: NewEvent, start?: ReserveStart) {
      try {
        return reserve(op, event, start);
      } catch (error) {
        return Promise.reject(error);
      }
    },

    transition(id, from, patch, event, guard) {
      try {
        return transition(id, from, patch, event, guard);
      } catch (error) {
        return Promise.reject(error);
      }
    },

    async get(id) {
      open('get');
      if (!findable(id)) return null;
      const row = rowById(id);
      return row === undefined ? null : recordFromValues(row);
    },

    async getByKey(idempotencyKey) {
      open('getByKey');
      if (!findable(idempotencyKey)) return null;
      const row = rows(SELECT_BY_KEY).get(idempotencyKey);
      return row === undefined ? null : recordFromValues(row);
    },

    async events(id) {
      open('events');
      if (!findable(id)) return [];
      return (stmt(SELECT_EVENTS).all(id) as EventRow[]).map(eventFromRow);
    },

    async list(filter: ListFilter = {}) {
      open('list');
      if (filter.limit !== undefined) requirePositiveInt(filter.limit, 'filter.limit');
      if (filter.dueBefore !== undefined) requireTime(filter.dueBefore, 'filter.dueBefore');
      if (nul && unmatchableFilter(filter, true)) return [];
      const { sql, params } = listSql(filter);
      return rows(sql)
        .all(...params)
        .map((row) => recordFromValues(row));
    },

    async claimDue(limit, leaseMs, owner, now, options) {
      open('claimDue');
      const actions = requireClaimArgs(limit, leaseMs, owner, now, options);
      requireStorableText(owner, 'owner', nul);
      const named = actionsToWalk(actions);
      const selectDue = named ? selectDueByActionSql(named.length) : SELECT_DUE;
      const dueParams = named
        ? selectDueByActionParams(now, named, limit)
        : selectDueParams(now, actions === undefined ? null : JSON.stringify(actions), limit);

      // One write transaction for the select and the leases: SQLite has a single writer per file,
      // so a second claimer (another connection or process) waits on BEGIN and then sees these
      // leases as live; that is what Postgres needs FOR UPDATE SKIP LOCKED for.
      return write(() => {
        const due = stmt(selectDue).all(...dueParams) as { id: string }[];
        const leaseExpiresAt = now + leaseMs;
        return due.map(({ id }): Claim => {
          const leaseToken = randomUUID();
          const row = rows(CLAIM_ONE).get(owner, leaseToken, leaseExpiresAt, now, id)!;
          const record = recordFromValues(row);
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

    async renewLease(id, leaseToken, leaseMs, now) {
      open('renewLease');
      requireRenewArgs(id, leaseToken, leaseMs, now);
      if (!findable(id) || !findable(leaseToken)) return null;
      // A write like any other, so it queues behind (and commits with) writes made before it.
      return write(() => {
        const row = stmt(RENEW_LEASE).get(now + leaseMs, id, leaseToken) as
          | { lease_expires_at: number }
          | undefined;
        return row === undefined ? null : Number(row.lease_expires_at);
      });
    },

    async prune(options) {
      open('prune');
      const limit = pruneLimit(options);
      const before = options.settledBefore;
      // Found by a read outside the write lock (a scan of many settled rows must not hold up writers), then
      // deleted under it; settled is final, and each DELETE checks again anyway.
      const found = stmt(SELECT_PRUNABLE).all(before, before, limit) as { id: string }[];
      if (found.length === 0) return 0;
      return write(() => {
        let deleted = 0;
        for (const { id } of found) {
          if (Number(stmt(DELETE_SETTLED).run(id, before).changes) === 0) continue;
          stmt(DELETE_EVENTS).run(id);
          deleted++;
        }
        return deleted;
      });
    },

    async close() {
      // Closing twice is harmless, so shutdown paths need no bookkeeping of their own.
      if (closed) return;
      closed = true;
      // Writes called before close still commit, and their callers hear how it went.
      flush();
      stmt.clear();
      rows.clear();
      // Whoever opened the connection closes it: a handle the caller passed in stays open.
      if (owned) db.close();
    },
  };
}

// The memory store keeps whatever an event holds; these columns are NOT NULL, so say which field
// is wrong instead of surfacing a driver constraint error.

// A cache of prepared statements by SQL text (`clear` drops them all). Patches vary in shape, so it is bounded
// rather than left to grow forever with odd callers.
function preparedOnce<T>(prepare: (sql: string) => T): ((sql: string) => T) & { clear(): void } {
  const cache = new Map<string, T>();
  const get = (sql: string): T => {
    let prepared = cache.get(sql);
    if (prepared === undefined) {
      if (cache.size >= MAX_CACHED_STATEMENTS) cache.clear();
      prepared = prepare(sql);
      cache.set(sql, prepared);
    }
    return prepared;
  };
  return Object.assign(get, { clear: () => cache.clear() });
}
