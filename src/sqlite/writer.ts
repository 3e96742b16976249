// The SQLite store's write path: every write runs in a transaction of the store's own, committed before its
// promise resolves; with group commit, concurrent writes share one transaction (and one fsync).
import { ReadbackError } from '../errors.js';
import type { SqliteLike, SqliteStatement } from './driver.js';
import { rollbackQuietly } from './schema.js';
import { BEGIN, COMMIT, RELEASE, ROLLBACK_TO, SAVEPOINT } from './sql.js';

/** Names a write's operation and says, from its result, whether the write ended (settled) it. */
export interface SoloWrite {
  id: string;
  ends: (value: unknown) => boolean;
}

/** A write waiting for the next group commit, with the callbacks of the promise its caller holds. */
interface PendingWrite {
  body: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** The one operation the write is for (reserve, transition), so the store can tell a lone writer. */
  solo?: SoloWrite;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** An isolated run that SQLite cut short: the write at `ended` failed and took the transaction with it. */
type Ended = { ended: number; error: unknown };

/** How the store writes; see `createWriter`. */
export interface Writer {
  /** Runs `body` in a write transaction, at once or with the next group commit; resolves once it is committed. */
  write<T>(body: () => T, solo?: SoloWrite): Promise<T>;
  /** Runs every queued write now (the store's close). */
  flush(): void;
  /** How many writes wait for the next group commit. */
  queued(): number;
  /** Whether a write of `solo` would commit at once, inside the call, rather than wait for company. */
  lone(solo: SoloWrite | undefined): boolean;
  /** Whether the write transaction is still open (false once SQLite ended it under a failing statement). */
  inTransaction(): boolean;
}

/**
 * The write path over one connection. Without group commit, each write is one transaction, run synchronously
 * inside the call. With it (the default), a write is queued, and one flush on the next macrotask (`setImmediate`)
 * runs every queued write in a single transaction, in the order they were called (a lone writer, see `lone`, is
 * flushed at once); a write that throws is undone alone (see `runBatch`), and nothing resolves before COMMIT.
 */
export function createWriter({
  db,
  stmt,
  label,
  groupCommit,
}: {
  db: SqliteLike;
  stmt: (sql: string) => SqliteStatement;
  label: string;
  groupCommit: boolean;
}): Writer {
  // Our BEGIN would fail inside a caller's transaction, and nesting would also make our records
  // only as durable as the caller's eventual COMMIT; a record must be on disk before execute runs.
  const requireOwnTransaction = () => {
    if (db.inTransaction === true || db.isTransaction === true) {
      throw new ReadbackError(
        'store_conflict',
        `${label}: the database handle is inside a transaction; readback commits its own records`,
      );
    }
  };

  // Handles that cannot say (a caller's minimal SqliteLike) are taken to be in the transaction they began.
  const inTransaction = (): boolean => db.inTransaction !== false && db.isTransaction !== false;

  // One transaction per write: what `groupCommit: false` runs, synchronously inside the call.
  const writeNow = <T>(body: () => T): T => {
    requireOwnTransaction();
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

  let queue: PendingWrite[] = [];
  let flushScheduled = false;
  // What the last transaction tells about concurrency: when it held one write, the operation it was for
  // and whether that write ended it. Undefined after a batch of several writes or a claim.
  let lastAlone: { id: string; ended: boolean } | undefined;

  // Runs the batch in one transaction and commits the writes that succeeded; undefined when the transaction
  // itself failed (BEGIN, COMMIT, or SQLite ending it) and every write was rejected. Not isolated, the writes
  // run back to back and the first that throws rolls the whole transaction back ('isolate': run it again
  // isolated). Isolated, each write of several runs in its own SAVEPOINT, so one that throws is undone alone.
  const runBatch = (batch: PendingWrite[], isolate: boolean): Outcome[] | 'isolate' | Ended | undefined => {
    try {
      requireOwnTransaction();
      stmt(BEGIN).run();
    } catch (error) {
      for (const write of batch) write.reject(error);
      return undefined;
    }
    const outcomes: Outcome[] = [];
    try {
      if (!isolate) {
        for (const write of batch) {
          outcomes.push({ ok: true, value: write.body() });
          // A write that caught an error after which SQLite ended the transaction (SQLITE_IOERR, SQLITE_FULL)
          // would leave the writes after it to commit one statement at a time: the batch fails here instead.
          if (!inTransaction())
            throw new ReadbackError('store_conflict', `${label}: SQLite ended the transaction`);
        }
      } else if (batch.length === 1) {
        // Alone in its transaction, a write needs no savepoint: a failure rolls the whole thing back.
        try {
          outcomes.push({ ok: true, value: batch[0]!.body() });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
      } else {
        for (const write of batch) {
          stmt(SAVEPOINT).run();
          try {
            const value = write.body();
            stmt(RELEASE).run();
            outcomes.push({ ok: true, value });
          } catch (error) {
            try {
              stmt(ROLLBACK_TO).run();
              stmt(RELEASE).run();
            } catch {
              // SQLite ended the whole transaction itself (SQLITE_FULL, SQLITE_IOERR): the writes before this
              // one are gone too. This one fails; the others run again without it (see `runIsolated`).
              rollbackQuietly(db);
              return { ended: outcomes.length, error };
            }
            outcomes.push({ ok: false, error });
          }
        }
      }
    } catch (error) {
      rollbackQuietly(db);
      if (!isolate) return 'isolate';
      for (const write of batch) write.reject(error);
      return undefined;
    }
    try {
      if (outcomes.some((o) => o.ok)) stmt(COMMIT).run();
      else rollbackQuietly(db);
    } catch (error) {
      rollbackQuietly(db);
      for (const write of batch) write.reject(error);
      return undefined;
    }
    return outcomes;
  };

  // Runs a batch with a savepoint per write. A write after which SQLite ended the whole transaction fails alone
  // all the same: the batch runs again without it (and without every other write that did so), at most once per
  // write, so each write's answer is what it would have been alone. Undefined when the transaction failed.
  const runIsolated = (batch: PendingWrite[]): Outcome[] | undefined => {
    const failed = new Map<PendingWrite, Outcome>();
    for (;;) {
      const live = batch.filter((write) => !failed.has(write));
      const result = live.length === 0 ? [] : runBatch(live, true);
      if (result === undefined || result === 'isolate') {
        // runBatch rejected the writes it ran; the ones set aside hear their own errors.
        for (const [write, outcome] of failed) write.reject((outcome as { error: unknown }).error);
        return undefined;
      }
      if (!Array.isArray(result)) {
        failed.set(live[result.ended]!, { ok: false, error: result.error });
        continue;
      }
      const answers = new Map(live.map((write, i) => [write, result[i]!]));
      return batch.map((write) => failed.get(write) ?? answers.get(write)!);
    }
  };

  // Runs every queued write in one transaction. Synchronous from BEGIN to the last settle, so no read
  // or write of this connection can land in the middle of a batch. A batch of several first runs without
  // savepoints: they cost each write two statements and SQLite a copy of every page it touches, and
  // almost no batch needs one. The writes are functions of what the file holds, so running them again
  // after a rollback gives what the first run would have, had the failing write been undone alone.
  const flush = () => {
    flushScheduled = false;
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    let outcomes = runBatch(batch, batch.length === 1);
    if (outcomes === 'isolate') outcomes = runIsolated(batch);
    if (outcomes === undefined || !Array.isArray(outcomes)) return;
    const only = batch.length === 1 ? batch[0]! : undefined;
    const first = outcomes[0]!;
    lastAlone = only?.solo && first.ok ? { id: only.solo.id, ended: only.solo.ends(first.value) } : undefined;
    // Only now, after COMMIT returned, is any write acknowledged.
    batch.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(outcome.error);
    });
  };

  // A lone writer — the last transaction held one write, for this same operation or for one that it
  // ended — commits at once instead of waiting a macrotask for company: a sequential caller (one action
  // at a time, its reserve, executing and settle writes) has none coming, and the wait cost it more than
  // the SQL. Concurrent operations interleave their writes (or arrive together and batch), which breaks
  // the chain, so from then on they queue and batch as before.
  const lone = (solo: SoloWrite | undefined): boolean =>
    solo !== undefined &&
    lastAlone !== undefined &&
    queue.length === 0 &&
    !flushScheduled &&
    (lastAlone.id === solo.id || lastAlone.ended);

  const write = <T>(body: () => T, solo?: SoloWrite): Promise<T> => {
    if (!groupCommit) return Promise.resolve(writeNow(body));
    if (lone(solo)) {
      // A batch of one, committed inside the call (what groupCommit: false does), and still lone after.
      let value: T;
      try {
        value = writeNow(body);
      } catch (error) {
        lastAlone = undefined;
        return Promise.reject(error);
      }
      lastAlone = { id: solo!.id, ended: solo!.ends(value) };
      return Promise.resolve(value);
    }
    return new Promise<T>((resolve, reject) => {
      queue.push({ body, resolve: resolve as (value: unknown) => void, reject, solo });
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
  };

  return { write, flush, queued: () => queue.length, lone, inTransaction };
}
