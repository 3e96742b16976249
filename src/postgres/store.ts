import { createHash, randomUUID } from 'node:crypto';
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
import { RESERVE_KEY, writeBatcher } from './batch.js';
import { isUniqueViolation, type PgNamedQuery, type PgQueryable, type PgResult } from './driver.js';
import { type ReconnectPolicy, withReconnect } from './retry.js';
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

const MAX_CACHED_TEXTS = 256;

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

const rowsOf = <Row>(result: { rows: Row[] }) => result.rows;

/** The row CTE statements return: an operation row plus the seq of the event just appended. */
type WrittenRow = OperationRow & { event_seq?: number };

/** A `selectWrite` row: the event a write appended (`seq`) and the operation as it is now. */
type FoundWrite = OperationRow & { seq: number; event_seq: number };

/** What a reserve answers. */
type Reservation = { record: OperationRecord; created: boolean };

/** One write: its statement, the write id its event carries, and how its rows (or its found event) answer. */
interface Write<T> {
  text: string;
  values: unknown[];
  /** The operation written. */
  id: string;
  writeId: string;
  /** The answer from the statement's rows. */
  apply: (written: WrittenRow[]) => T | Promise<T>;
  /** The answer from the write's own event, found by a retry after a lost connection. */
  found: (write: FoundWrite) => T;
}

// Which statements are retried after a connection error, and why that is safe (withReconnect only
// retries when the connection failed, so the statement either never ran or its COMMIT outcome is unknown):
// - reads (get, getByKey, events, list): no effect, so running them again is harmless.
// - claimDue: if a lost claim did commit, those rows are leased to this owner under tokens it never
//   learned; nobody can write them until the lease lapses, then any reconciler claims them afresh. A
//   retry claims other rows. So a lost claim delays work by one lease and never duplicates it.
// - renewLease: a compare-and-set on the token that only moves expiry forward; applying it twice is
//   the same as applying it once a moment later.
// - reserve and transition: NOT blindly re-applied. Each call carries a fresh write id stored on the
//   event it appends. A retry first looks that id up: found means the earlier try committed, and its
//   result is rebuilt from the database. Not found means it did not commit yet; the statement runs again
//   as a compare-and-set, and the unique (operation_id, write_id) index turns a late commit of the first
//   try into a unique violation of the second (or vice versa), so the write lands at most once.
// A caller's own pool gets no retries: its owner decides how connections are handled.

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
  // The claim text for each count of named actions, built once.
  const claimByAction: string[] = [];
  let closed = false;

  const open = (method: string) => {
    if (closed) throw new ReadbackError('store_closed', `${label} is closed; cannot ${method}`);
  };

  // A pg.Pool runs queries on many connections at once; a single client (pg.Client) must get them
  // one at a time (pg@8 queues them with a deprecation warning, pg@9 will refuse), so queue them here.
  const serial = typeof (db as { totalCount?: unknown }).totalCount !== 'number';
  let tail: Promise<unknown> = Promise.resolve();
  // A named statement is parsed and planned once per connection; after that each call only binds and
  // executes, which roughly halves the server's work for these short statements.
  const names = new Map<string, string>();
  const send = (text: string, values: unknown[]): Promise<PgResult> => {
    if (!namedStatements) return db.query(text, values);
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_CACHED_TEXTS) names.clear();
      name = `readback_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return (db.query as unknown as (config: PgNamedQuery) => Promise<PgResult>)({ name, text, values });
  };
  const query = (text: string, values: unknown[]) => {
    if (!serial) return send(text, values);
    const run = tail.then(() => send(text, values));
    tail = run.catch(() => undefined);
    return run;
  };

  // Plain promise chains rather than async functions on the write path: each async layer costs a promise
  // and microtask turns per statement, a measurable share of an action that waits on three statements.
  // Resolves to the whole result, so a caller reading the rows needs no `then` of ours.
  const sendOnce = <Row>(text: string, values: unknown[]): Promise<{ rows: Row[] }> => {
    try {
      return query(text, values) as Promise<unknown> as Promise<{ rows: Row[] }>;
    } catch (error) {
      // A driver that throws instead of rejecting is reported the same way.
      return Promise.reject(error);
    }
  };
  const once = <Row>(text: string, values: unknown[]): Promise<Row[]> =>
    sendOnce<Row>(text, values).then(rowsOf);

  const batcher = groupCommit ? writeBatcher(sendOnce<WrittenRow>) : undefined;
  // Reads, claims and renewals: safe to run again after a connection error (see above).
  const rows = <Row>(text: string, values: unknown[]): Promise<Row[]> =>
    withReconnect(reconnect, () => once<Row>(text, values));

  /**
   * Runs a write that appends an event tagged `writeId`, at most once even when a connection dies
   * mid-commit. `first`, when given, makes the first try (a group commit); retries send `text` alone.
   */
  const writeOnce = <T>(
    write: Write<T>,
    first?: () => Promise<WrittenRow[]>,
    /** Turns a statement's error into the caller's (it rethrows what it does not know). */
    refine?: (error: unknown) => never,
  ): Promise<T> => {
    const { text, values, apply } = write;
    const firstTry = (): Promise<T> =>
      first
        ? first().then(apply, refine)
        : sendOnce<WrittenRow>(text, values).then((result) => apply(result.rows), refine);
    // The retry path (and its closures) is only built for a pool readback owns, which may reconnect.
    if (reconnect === undefined) return firstTry();
    return withReconnect(reconnect, (retry) => {
      if (!retry) return firstTry();
      const again = retryWrite(write);
      return refine ? again.catch(refine) : again;
    });
  };

  /** A write's retry after a lost connection: its own earlier write if that committed, else the statement again. */
  const retryWrite = async <T>({ text, values, id, writeId, apply, found }: Write<T>): Promise<T> => {
    const lookUp = async () => {
      const [write] = await once<FoundWrite>(sql.selectWrite, [id, writeId]);
      return write === undefined ? undefined : found(write);
    };
    const earlier = await lookUp();
    if (earlier !== undefined) return earlier;
    let written: WrittenRow[];
    try {
      written = await once<WrittenRow>(text, values);
    } catch (error) {
      // The first try committed after the look-up above: this one was refused by the write-id index.
      if (isUniqueViolation(error, 'events_write_id')) {
        const late = await lookUp();
        if (late !== undefined) return late;
      }
      throw error;
    }
    // A retry whose compare-and-set no longer matched may be looking at the first try's own change.
    if (written.length === 0) {
      const late = await lookUp();
      if (late !== undefined) return late;
    }
    return apply(written);
  };

  // Appends an event's columns to a statement's parameters, in the order the statements bind them.
  const pushEventValues = (params: unknown[], event: NewEvent): unknown[] => {
    params.push(
      RECORD_SCHEMA_VERSION,
      wholeMs(event.at),
      event.type,
      event.status ?? null,
      event.actor ?? null,
      event.attempt,
      // SQL NULL for "absent", so a given `null` (JSON 'null') still reads back as given.
      event.detail === undefined ? null : (JSON.stringify(event.detail) ?? null),
    );
    return params;
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

// Times are bigint milliseconds here, and Postgres refuses a fraction ("invalid input syntax for type bigint")
// where memory and SQLite keep it: a clock with sub-millisecond resolution, or a fractional contract duration,
// would fail every write. So a written time is the nearest whole millisecond.
function wholeMs(ms: number): number {
  return Number.isInteger(ms) ? ms : Math.round(ms);
}

// Where the reserve statement binds its JSON texts (recordParams order, then the event's columns).
const SCOPE_PARAM = 4;
const INPUT_PARAM = 9;
const DETAIL_PARAM = 33;
const WRITE_ID_PARAM = 34;
const START_DETAIL_PARAM = 40;

/** Appends the start event's parameters ($36..$41), or nulls for a reserve that starts nothing. */
function pushStartValues(params: unknown[], event: NewEvent | undefined): void {
  if (event === undefined) {
    params.push(null, null, null, null, null, null);
    return;
  }
  const detail = event.detail === undefined ? null : (JSON.stringify(event.detail) ?? null);
  params.push(
    wholeMs(event.at),
    event.type,
    event.status ?? null,
    event.actor ?? null,
    event.attempt,
    detail,
  );
}

/** The start event's JSON text, named for an error, when the reserve has one. */
function startJson(start: ReserveStart | undefined, values: unknown[]): [string, unknown][] {
  return start === undefined ? [] : [['start.event.detail', values[START_DETAIL_PARAM]]];
}

// A JSON string escape jsonb refuses: \u0000, or a surrogate JSON.stringify escaped because it is unpaired.
// The escape counts only when the backslashes before it are an even number (not themselves escaped).
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * Turns Postgres refusing a JSON value (22P05 for \u0000, 22P02 for an unpaired surrogate) into an error
 * naming the field: valid JavaScript that jsonb cannot hold. The statement failed whole, so nothing was
 * written. Looked for only after the statement failed, so a write that succeeds pays nothing for it.
 */
function refuseUnstorableJson(error: unknown, texts: [field: string, text: unknown][]): void {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== '22P05' && code !== '22P02') return;
  const found = texts.find(([, text]) => typeof text === 'string' && UNSTORABLE_ESCAPE.test(text));
  if (found === undefined) return;
  throw new ReadbackError(
    'unstorable_value',
    `holds a NUL character (\\u0000) or an unpaired UTF-16 surrogate, which PostgreSQL jsonb cannot store (${(error as Error).message})`,
    found[0],
  );
}

// These columns are NOT NULL, so say which field is wrong instead of surfacing a constraint error.
