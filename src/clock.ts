/** Time as readback sees it: injected so tests and fakes share one timeline. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Waits `ms`; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Optional: calls `fire` after `ms` unless the returned cancel function runs first.
   * Step deadlines use it when present because it is far cheaper than an abortable sleep.
   */
  deadline?(ms: number, fire: () => void): () => void;
}

/** The wall clock with real timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  deadline: (ms, fire) => {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

// Times formatted in the same millisecond share one text: formatting a Date costs ~0.3 µs, and a run formats
// the same moment for its completion and several trace events.
let lastMs = Number.NaN;
let lastIso = '';

/** A time in ms since the epoch as ISO 8601; throws RangeError for a time a Date cannot hold, as `toISOString` does. */
export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
