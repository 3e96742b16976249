import type { Clock } from '../../clock.js';

interface Sleeper {
  deadline: number;
  seq: number;
  resolve: () => void;
}

/**
 * A virtual clock for tests: `sleep` jumps time forward instead of waiting, so retry, poll and
 * settlement logic runs in microseconds while still seeing realistic timestamps.
 */
export class FakeClock implements Clock {
  /** Every duration passed to `sleep`, in call order, so tests can assert backoff schedules. */
  readonly sleeps: number[] = [];
  private current: number;
  private readonly sleepers: Sleeper[] = [];
  private seq = 0;
  private pumpScheduled = false;

  /** Starts the clock at `start` (ms since the epoch); defaults to 2026-01-01T00:00:00.000Z. */
  constructor(start: number = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.current = start;
  }

  /** The current virtual time in milliseconds since the epoch. */
  now(): number {
    return this.current;
  }

  /**
   * Resolves once virtual time reaches `now() + ms`, advancing the clock to that moment itself.
   * Sleepers wake one per macrotask in deadline order, so concurrent sleeps overlap (two 100 ms
   * sleeps started together end at +100, not +200) and async work between them can interleave.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = this.sleepers.indexOf(sleeper);
        if (index >= 0) this.sleepers.splice(index, 1);
        reject(signal?.reason);
      };
      const sleeper: Sleeper = {
        deadline: this.current + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.schedulePump();
    });
  }

  /** Moves time forward by `ms` without waking anyone early; pending sleepers still wake in order. */
  advance(ms: number): void {
    if (ms < 0) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    this.current += ms;
  }

  /** Sets the absolute time; may move backwards, which is how tests simulate clock skew. */
  set(ms: number): void {
    this.current = ms;
  }

  // One wake-up per macrotask: waking everyone at once would let a long sleep finish before a
  // short one whose owner is still running microtasks, which real timers never do.
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      const next = this.takeEarliest();
      if (!next) return;
      if (next.deadline > this.current) this.current = next.deadline;
      next.resolve();
      if (this.sleepers.length > 0) this.schedulePump();
    });
  }

  private takeEarliest(): Sleeper | undefined {
    let best = -1;
    for (let i = 0; i < this.sleepers.length; i++) {
      const s = this.sleepers[i]!;
      const b = best >= 0 ? this.sleepers[best]! : undefined;
      if (!b || s.deadline < b.deadline || (s.deadline === b.deadline && s.seq < b.seq)) best = i;
    }
    return best >= 0 ? this.sleepers.splice(best, 1)[0] : undefined;
  }
}
