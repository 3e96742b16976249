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

// Aborting with an explicit reason avoids building a DOMException (and its stack) on every finished step.
const FINISHED = Symbol('step finished');

/** A signal that never aborts, shared so runs without a caller signal allocate none. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/**
 * Runs `work` with a deadline on the injected clock. `work` receives a lazy signal getter: the step's
 * AbortController (which fires on timeout or on `parent`) is only built if the step asks for its signal,
 * because building one per step costs more than the rest of a fast step. One promise settles on whichever
 * comes first, the work or the deadline (cheaper than racing a second promise against it).
 */
export function withDeadline<T>(
  clock: Clock,
  step: string,
  ms: number,
  parent: AbortSignal,
  work: (signal: () => AbortSignal) => Promise<T> | T,
): Promise<T> {
  let controller: AbortController | undefined;
  let timedOut: StepTimeout | undefined;
  const onParentAbort = () => controller?.abort(parent.reason);
  const signal = () => {
    if (!controller) {
      controller = new AbortController();
      if (timedOut) controller.abort(timedOut);
      else if (parent.aborted) controller.abort(parent.reason);
      else if (parent !== NEVER_ABORTED) parent.addEventListener('abort', onParentAbort, { once: true });
    }
    return controller.signal;
  };
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let cancel: () => void = () => {};
    const end = () => {
      done = true;
      cancel();
      if (controller) parent.removeEventListener('abort', onParentAbort);
    };
    const fire = () => {
      if (done) return;
      timedOut = new StepTimeout(step, ms);
      controller?.abort(timedOut);
      end();
      reject(timedOut);
    };
    if (clock.deadline) {
      cancel = clock.deadline(ms, fire);
    } else {
      const timer = new AbortController();
      clock.sleep(ms, timer.signal).then(fire, () => {});
      cancel = () => timer.abort(FINISHED);
    }
    // The deadline is armed first, as a slow synchronous `work` still counts against it.
    let result: Promise<T> | T;
    try {
      result = work(signal);
    } catch (error) {
      if (!done) {
        end();
        reject(error);
      }
      return;
    }
    Promise.resolve(result).then(
      (value) => {
        if (done) return;
        end();
        resolve(value);
      },
      (error) => {
        if (done) return;
        end();
        reject(error);
      },
    );
  });
}
