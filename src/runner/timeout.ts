import { type Clock, MAX_TIMER_MS, systemClock } from '../clock.js';

/** Raised when a step outlives its time budget. */
export class StepTimeout extends Error {
  constructor(
    readonly step: string,
    readonly ms: number,
  ) {
    super(`${step} did not answer within ${ms} ms`);
  }
}

/** A signal that never aborts, shared so runs without a caller signal allocate none. */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

/** What a step under a deadline is handed: its signal, built only when the step asks for it. */
export interface LazySignal {
  signal(): AbortSignal;
}

/**
 * Runs `work` with a deadline on the injected clock. `work` receives the step's lazy signal: its
 * AbortController (which fires on timeout or on `parent`) is only built if the step asks for it, because
 * building one per step costs more than the rest of a fast step. One promise settles on whichever comes
 * first, the work or the deadline (cheaper than racing a second promise against it).
 */
export function withDeadline<T>(
  clock: Clock,
  step: string,
  ms: number,
  parent: AbortSignal,
  work: (lazy: LazySignal) => Promise<T> | T,
): Promise<T> {
  const deadline = new StepDeadline<T>(step, ms, parent);
  const promise = new Promise<T>((resolve, reject) => {
    deadline.resolve = resolve;
    deadline.reject = reject;
  });
  // The deadline is armed first, as a slow synchronous `work` still counts against it.
  deadline.arm(clock);
  let result: Promise<T> | T;
  try {
    result = work(deadline);
  } catch (error) {
    deadline.fail(error);
    return promise;
  }
  Promise.resolve(result).then(
    (value) => deadline.succeed(value),
    (error) => deadline.fail(error),
  );
  return promise;
}

// The system clock's timer calls this with the deadline as its argument, so arming one makes no closure.
function fireDeadline(deadline: { fire(): void }): void {
  deadline.fire();
}

/** One step's deadline: its timer, its lazily built AbortController and the settlers of its promise. */
class StepDeadline<T> implements LazySignal {
  resolve!: (value: T) => void;
  reject!: (error: unknown) => void;
  private done = false;
  private controller: AbortController | undefined;
  private timedOut: StepTimeout | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private cancel: (() => void) | undefined;
  private onParentAbort: (() => void) | undefined;

  constructor(
    private readonly step: string,
    private readonly ms: number,
    private readonly parent: AbortSignal,
  ) {}

  arm(clock: Clock): void {
    if (clock === systemClock && this.ms <= MAX_TIMER_MS) {
      this.timer = setTimeout(fireDeadline, this.ms, this);
    } else if (clock.deadline) {
      this.cancel = clock.deadline(this.ms, () => this.fire());
    } else {
      const timer = new AbortController();
      clock.sleep(this.ms, timer.signal).then(
        () => this.fire(),
        () => {},
      );
      // Aborting with an explicit reason avoids building a DOMException (and its stack) per finished step.
      this.cancel = () => timer.abort(FINISHED);
    }
  }

  signal(): AbortSignal {
    if (!this.controller) {
      const controller = new AbortController();
      this.controller = controller;
      const parent = this.parent;
      if (this.timedOut) controller.abort(this.timedOut);
      else if (parent.aborted) controller.abort(parent.reason);
      else if (parent !== NEVER_ABORTED) {
        this.onParentAbort = () => controller.abort(parent.reason);
        parent.addEventListener('abort', this.onParentAbort, { once: true });
      }
    }
    return this.controller.signal;
  }

  succeed(value: T): void {
    if (this.done) return;
    this.end();
    this.resolve(value);
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.end();
    this.reject(error);
  }

  fire(): void {
    if (this.done) return;
    const timedOut = new StepTimeout(this.step, this.ms);
    this.timedOut = timedOut;
    this.controller?.abort(timedOut);
    this.fail(timedOut);
  }

  private end(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    else this.cancel?.();
    if (this.onParentAbort) this.parent.removeEventListener('abort', this.onParentAbort);
  }
}

const FINISHED = Symbol('step finished');
