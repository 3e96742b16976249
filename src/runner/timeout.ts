import type { Clock } from '../clock.js';

/** Raised when a step outlives its time budget. */
export class StepTimeout extends Error {
  constructor(
    readonly step: string,
    readonly ms: number,
  ) {
    super(`${step} did not answer within ${ms} ms`);
  }
}

/**
 * Runs `work` with a deadline on the injected clock and an abort signal that fires on timeout or on `parent`.
 * The timer is always cancelled so a finished step never keeps the process alive.
 */
export async function withDeadline<T>(
  clock: Clock,
  step: string,
  ms: number,
  parent: AbortSignal,
  work: (signal: AbortSignal) => Promise<T> | T,
): Promise<T> {
  const timer = new AbortController();
  const stepAbort = new AbortController();
  const onParentAbort = () => stepAbort.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  const deadline = clock.sleep(ms, timer.signal).then(
    () => {
      const error = new StepTimeout(step, ms);
      stepAbort.abort(error);
      throw error;
    },
    () => new Promise<never>(() => {}),
  );
  try {
    return await Promise.race([Promise.resolve().then(() => work(stepAbort.signal)), deadline]);
  } finally {
    timer.abort();
    parent.removeEventListener('abort', onParentAbort);
  }
}
