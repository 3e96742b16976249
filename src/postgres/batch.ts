import type { OperationRow } from '../sqlite/rows.js';
import { isConnectionError } from './retry.js';

/** A row a write statement returns (the batched statements return the same operation columns). */
export type WrittenRow = OperationRow & { event_seq?: number };

/** One write (a reserve or a transition) as a single statement would send it: its shape and parameters. */
export interface QueuedWrite {
  /** The shape: writes with equal keys share a statement text (same kind, columns and guards). */
  key: string;
  /** The single statement for this shape, used for a lone write and as the fallback. */
  text: string;
  /** The batched statement for this shape (built on demand, cached by the caller). */
  batchText: () => string;
  /** The single statement's parameters, $1 first: the operation id (a string). */
  params: unknown[];
}

interface Waiting extends QueuedWrite {
  resolve: (rows: WrittenRow[]) => void;
  reject: (error: unknown) => void;
}

/** The shape key of every reserve (one statement text per schema). */
export const RESERVE_KEY = 'reserve';

// A bound on one statement's parameters (and the time its row locks are held), far above a reconciler round.
const MAX_BATCH = 500;

/** Runs a statement once (no retry) and resolves to its result (the rows are read here, in one `then`). */
type Send = (text: string, values: unknown[]) => Promise<{ rows: WrittenRow[] }>;

/**
 * Group commit for writes: every reserve and transition queued during one turn of the event loop is sent
 * on the next macrotask (`setImmediate`), and those of one shape go as ONE statement (`reserveBatchSql`,
 * `transitionBatchSql`), so 32 operations settled by one reconciler round, or 64 runs started at once,
 * cost one round trip, one commit and one WAL flush instead of one each. Each caller gets exactly the
 * rows its own single statement would have returned: its row if its write applied, none if not (a
 * compare-and-set that did not hold, a key already reserved). An operation queued twice in one turn
 * goes in a later statement for its second write (in call order), since one statement changes a row at
 * most once. If a batched statement fails, it changed nothing (one statement is one transaction): after
 * a connection error every caller gets that error (and retries by its write id, as any write does);
 * after any other error each write is sent again alone, so one bad row fails only its own caller.
 * Nothing resolves before the statement carrying it has committed.
 */
export function writeBatcher(send: Send) {
  let queue: Waiting[] = [];
  let scheduled: ReturnType<typeof setImmediate> | undefined;
  // Statements sent and not yet answered (close waits for them); each removes itself when it ends.
  const inFlight = new Set<Promise<unknown>>();
  // What the last flush tells about concurrency: when it sent one write, that operation and whether the
  // write settled it. Undefined after a flush of several, or a failure.
  let lastAlone: { id: unknown; ended: boolean } | undefined;

  const noteAlone = (id: unknown, rows: WrittenRow[]) => {
    lastAlone = { id, ended: rows[0]?.lifecycle === 'settled' };
  };
  const alone = (t: Waiting) => send(t.text, t.params).then((result) => t.resolve(result.rows), t.reject);
  const track = (done: Promise<void>) => {
    inFlight.add(done);
    done.finally(() => inFlight.delete(done));
  };
  // Sends one write alone, tracked in `inFlight`; the promise carries the rows or the error.
  const sendAlone = (id: unknown, text: string, params: unknown[]): Promise<WrittenRow[]> => {
    const sent: Promise<WrittenRow[]> = send(text, params).then(
      ({ rows }) => {
        inFlight.delete(sent);
        noteAlone(id, rows);
        return rows;
      },
      (error: unknown) => {
        inFlight.delete(sent);
        throw error;
      },
    );
    inFlight.add(sent);
    return sent;
  };

  // A lone writer (the last flush held one write, of this operation or of one it settled, and
  // nothing is queued or in flight) sends at once instead of waiting a macrotask for company: a caller
  // running one action at a time has none coming. Concurrent operations break the chain (their writes
  // interleave or arrive together), and from then on they queue and batch.
  const lone = (id: unknown): boolean =>
    lastAlone !== undefined &&
    queue.length === 0 &&
    scheduled === undefined &&
    inFlight.size === 0 &&
    (lastAlone.id === id || lastAlone.ended);

  const sendWave = async (wave: Waiting[]): Promise<void> => {
    if (wave.length === 1) return alone(wave[0]!);
    let rows: WrittenRow[];
    try {
      // One JSON parameter holding every write's parameters: the statement text stays fixed (so it
      // is prepared once per connection), and JSON.stringify is far cheaper than pg's array literals.
      ({ rows } = await send(wave[0]!.batchText(), [JSON.stringify(wave.map((t) => t.params))]));
    } catch (error) {
      if (isConnectionError(error)) {
        for (const t of wave) t.reject(error);
        return;
      }
      // A value one write carries (a wrong type, a taken id) fails the whole statement: find whose it was.
      await Promise.all(wave.map(alone));
      return;
    }
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const t of wave) {
      const row = byId.get(t.params[0] as string);
      t.resolve(row === undefined ? [] : [row]);
    }
  };

  // Same-shape writes of distinct operations share a statement; a repeat of an operation waits
  // for the statement before it, so its compare-and-set sees the first write as a sequential call would.
  const sendShape = async (group: Waiting[]): Promise<void> => {
    let rest = group;
    while (rest.length > 0) {
      const seen = new Set<unknown>();
      const wave: Waiting[] = [];
      const later: Waiting[] = [];
      for (const t of rest) {
        if (seen.has(t.params[0]) || wave.length >= MAX_BATCH) later.push(t);
        else {
          seen.add(t.params[0]);
          wave.push(t);
        }
      }
      await sendWave(wave);
      rest = later;
    }
  };

  const flush = () => {
    scheduled = undefined;
    const batch = queue;
    queue = [];
    lastAlone = undefined;
    if (batch.length === 1) {
      const only = batch[0]!;
      sendAlone(only.params[0], only.text, only.params).then(only.resolve, only.reject);
      return;
    }
    const shapes = new Map<string, Waiting[]>();
    for (const t of batch) {
      const group = shapes.get(t.key);
      if (group === undefined) shapes.set(t.key, [t]);
      else group.push(t);
    }
    const send = (group: Waiting[]) =>
      sendShape(group)
        // Only a bug lands here; whoever is still waiting hears of it rather than hanging.
        .catch((error: unknown) => {
          for (const t of group) t.reject(error);
        });
    // Reserves go before transitions: a transition called in the same turn as its operation's reserve
    // must find the row, as it would have one call after the other. Shapes of one kind run side by side.
    const reserves = shapes.get(RESERVE_KEY);
    shapes.delete(RESERVE_KEY);
    const others = () => Promise.all(Array.from(shapes.values(), send)).then(() => undefined);
    if (reserves === undefined) track(others());
    else track(send(reserves).then(shapes.size > 0 ? others : undefined));
  };

  return {
    /** Queues a write for the next group commit; resolves to the rows its single statement would return. */
    enqueue(t: QueuedWrite): Promise<WrittenRow[]> {
      const id = t.params[0];
      if (lone(id)) {
        lastAlone = undefined;
        return sendAlone(id, t.text, t.params);
      }
      return new Promise<WrittenRow[]>((resolve, reject) => {
        queue.push({ ...t, resolve, reject });
        scheduled ??= setImmediate(flush);
      });
    },
    /** Sends whatever is queued now and waits until every statement sent has finished (for close). */
    async drain(): Promise<void> {
      if (scheduled !== undefined) {
        clearImmediate(scheduled);
        flush();
      }
      // A lone send's promise rejects with its statement's error, which its caller hears of: not close.
      while (inFlight.size > 0) await Promise.allSettled(inFlight);
    },
  };
}
