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
