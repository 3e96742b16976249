// How the Postgres store sends its statements: serially over a single client, as named prepared statements
// when asked, and, for a pool readback owns, again after a lost connection, with writes applied at most once.
import { createHash } from 'node:crypto';
import type { OperationRow } from '../sqlite/rows.js';
import { type WrittenRow, writeBatcher } from './batch.js';
import { isUniqueViolation, type PgNamedQuery, type PgQueryable, type PgResult } from './driver.js';
import { type ReconnectPolicy, withReconnect } from './retry.js';

export type { WrittenRow } from './batch.js';

const MAX_CACHED_TEXTS = 256;

const rowsOf = <Row>(result: { rows: Row[] }) => result.rows;

/** A `selectWrite` row: the event a write appended (`seq`) and the operation as it is now. */
export type FoundWrite = OperationRow & { seq: number; event_seq: number };

/** One write: its statement, the write id its event carries, and how its rows (or its found event) answer. */
export interface Write<T> {
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

/** What `createSender` needs: the queryable, the statement that finds a write by its id, and the send options. */
export interface SenderOptions {
  db: PgQueryable;
  /** `statementsFor(tables).selectWrite`. */
  selectWrite: string;
  namedStatements: boolean;
  reconnect: ReconnectPolicy | undefined;
  groupCommit: boolean;
}

/** The store's statement paths: reads that may run again (`rows`), writes applied at most once (`writeOnce`). */
export function createSender({ db, selectWrite, namedStatements, reconnect, groupCommit }: SenderOptions) {
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
      const [write] = await once<FoundWrite>(selectWrite, [id, writeId]);
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

  return { rows, writeOnce, batcher };
}
