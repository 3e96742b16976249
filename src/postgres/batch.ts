import type { OperationRow } from '../sqlite/rows.js';
import { isConnectionError } from './retry.js';

/** A row a transition statement returns (the batched statement returns the same operation columns). */
export type TransitionRow = OperationRow & { event_seq?: number };

/** One transition as a single statement would send it: its shape, and `transitionSql`'s parameters. */
export interface QueuedTransition {
  /** The shape: transitions with equal keys share a statement text (same columns, same guards). */
  key: string;
  /** The single statement for this shape, used for a lone transition and as the fallback. */
  text: string;
  /** The batched statement for this shape (built on demand, cached by the caller). */
  batchText: () => string;
  /** `transitionSql`'s parameters: $1 id (a string), $2 from (array), then the rest in order. */
  params: unknown[];
}

interface Waiting extends QueuedTransition {
  resolve: (rows: TransitionRow[]) => void;
  reject: (error: unknown) => void;
}

// A bound on one statement's parameters (and the time its row locks are held), far above a reconciler round.
const MAX_BATCH = 500;

/** Runs a statement once (no retry) and resolves to its result (the rows are read here, in one `then`). */
type Send = (text: string, values: unknown[]) => Promise<{ rows: TransitionRow[] }>;

/**
 * Group commit for transitions: every transition queued during one turn of the event loop is sent on
 * the next macrotask (`setImmediate`), and those of one shape go as ONE statement (`transitionBatchSql`),
 * so 32 operations settled by one reconciler round cost one round trip, one commit and one WAL flush
 * instead of 32. Each caller gets exactly the rows its own single statement would have returned: its
 * row if its compare-and-set held, none if not. An operation queued twice in one turn goes in a later
 * statement for its second write (in call order), since one UPDATE changes a row at most once. If a
 * batched statement fails, it changed nothing (one statement is one transaction): after a connection
 * error every caller gets that error (and retries by its write id, as any write does); after any other
 * error each transition is sent again alone, so one bad row fails only its own caller. Nothing resolves
 * before the statement carrying it has committed.
 */
export function transitionBatcher(send: Send) {
  let queue: Waiting[] = [];
  let scheduled: ReturnType<typeof setImmediate> | undefined;
  // Statements sent and not yet answered (close waits for them); each removes itself when it ends.
  const inFlight = new Set<Promise<unknown>>();
  // What the last flush tells about concurrency: when it sent one transition, that operation and whether
  // the transition settled it. Undefined after a flush of several, or a failure.
  let lastAlone: { id: unknown; ended: boolean } | undefined;

  const noteAlone = (id: unknown, rows: TransitionRow[]) => {
    lastAlone = { id, ended: rows[0]?.lifecycle === 'settled' };
  };
  const alone = (t: Waiting) => send(t.text, t.params).then((result) => t.resolve(result.rows), t.reject);
  const track = (done: Promise<void>) => {
    inFlight.add(done);
    done.finally(() => inFlight.delete(done));
  };
  // Sends one transition alone, tracked in `inFlight`; the promise carries the rows or the error.
  const sendAlone = (id: unknown, text: string, params: unknown[]): Promise<TransitionRow[]> => {
    const sent: Promise<TransitionRow[]> = send(text, params).then(
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

  // A lone writer (the last flush held one transition, of this operation or of one it settled, and
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
    let rows: TransitionRow[];
    try {
      // One JSON parameter holding every transition's parameters: the statement text stays fixed (so it
      // is prepared once per connection), and JSON.stringify is far cheaper than pg's array literals.
      ({ rows } = await send(wave[0]!.batchText(), [JSON.stringify(wave.map((t) => t.params))]));
    } catch (error) {
      if (isConnectionError(error)) {
        for (const t of wave) t.reject(error);
        return;
      }
      // A value one transition carries (a wrong type, say) fails the whole statement: find whose it was.
      await Promise.all(wave.map(alone));
      return;
    }
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const t of wave) {
      const row = byId.get(t.params[0] as string);
      t.resolve(row === undefined ? [] : [row]);
    }
  };

  // Same-shape transitions of distinct operations share a statement; a repeat of an operation waits
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
    for (const group of shapes.values()) {
      track(
        sendShape(group)
          // Only a bug lands here; whoever is still waiting hears of it rather than hanging.
          .catch((error: unknown) => {
            for (const t of group) t.reject(error);
          }),
      );
    }
  };

  return {
    /** Queues a transition for the next group commit; resolves to the rows its single statement would return. */
    enqueue(t: QueuedTransition): Promise<TransitionRow[]> {
      const id = t.params[0];
      if (lone(id)) {
        lastAlone = undefined;
        return sendAlone(id, t.text, t.params);
      }
      return new Promise<TransitionRow[]>((resolve, reject) => {
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
