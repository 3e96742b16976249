import { ReadbackError } from '../errors.js';
import { pruneLimit } from './records.js';
import type { OperationStore, PruneOptions } from './types.js';

/** Options for `pruneSettled`: one cutoff and batch size for the whole sweep, and how to follow or stop it. */
export interface PruneSweepOptions extends PruneOptions {
  /** Checked between batches: an aborted sweep stops there, and what it deleted stays deleted. */
  signal?: AbortSignal;
  /** Told the size of each batch and the running total, after the batch committed. */
  onBatch?: (deleted: number, total: number) => void;
}

/** What a sweep did: how many operations it deleted, and whether it stopped early on its signal. */
export interface PruneSweep {
  deleted: number;
  aborted: boolean;
}

// After each batch the sweep waits this many times as long as the batch took: back-to-back batches hold a SQLite
// file's write lock almost without a break, and writers waiting in SQLite's busy handler (which sleeps between
// tries) starved; a benchmark's runs fell to 6 % of their rate. A quarter of the time is the sweep's.
const PAUSE_FACTOR = 3;
const MIN_PAUSE_MS = 20;

/**
 * Deletes every settled operation older than the cutoff (`store.prune`, batch after batch until a batch comes back
 * short), pausing between batches so that runs and reconcilers writing to the same store keep getting through.
 * A batch that fails rejects the sweep; the batches before it stay deleted (`onBatch` has counted them).
 */
export async function pruneSettled(store: OperationStore, options: PruneSweepOptions): Promise<PruneSweep> {
  if (typeof store.prune !== 'function') {
    throw new ReadbackError(
      'invalid_options',
      'this store cannot prune: it has no prune method (a custom or older OperationStore)',
      'store',
    );
  }
  const limit = pruneLimit(options);
  const batch: PruneOptions = { settledBefore: options.settledBefore, limit };
  let deleted = 0;
  for (;;) {
    if (options.signal?.aborted) return { deleted, aborted: true };
    const started = Date.now();
    const count = await store.prune(batch);
    if (!Number.isSafeInteger(count) || count < 0 || count > limit) {
      throw new ReadbackError(
        'store_conflict',
        `store.prune returned ${String(count)}, not a count from 0 to ${limit}`,
      );
    }
    deleted += count;
    options.onBatch?.(count, deleted);
    if (count < limit) return { deleted, aborted: false };
    await pause(Math.max(MIN_PAUSE_MS, PAUSE_FACTOR * (Date.now() - started)), options.signal);
  }
}

/** Waits `ms`, or less when `signal` aborts meanwhile. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
