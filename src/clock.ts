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

/** The longest delay `setTimeout` honours; above it Node fires after 1 ms instead (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The wall clock with real timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  deadline: (ms, fire) => {
    if (ms > MAX_TIMER_MS) return longTimer(ms, fire);
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const cancel = longTimer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      const onAbort = () => {
        cancel();
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

// A 30-day verifyTimeoutMs must not time out at once: a delay beyond MAX_TIMER_MS is waited in steps.
function longTimer(ms: number, fire: () => void): () => void {
  let timer: ReturnType<typeof setTimeout>;
  const arm = (left: number) => {
    timer = setTimeout(
      () => (left > MAX_TIMER_MS ? arm(left - MAX_TIMER_MS) : fire()),
      Math.min(left, MAX_TIMER_MS),
    );
  };
  arm(ms);
  return () => clearTimeout(timer);
}

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
