import type { Clock } from '../../clock.js';

/** Options every fake takes: the clock it shares with the runner, so both see one timeline. */
export interface FakeOptions {
  clock: Clock;
}

/** One call made against a fake, as the caller made it; `fault` names the injected fault that fired on it. */
export interface CallRecord {
  method: string;
  args: unknown[];
  at: number;
  fault?: string;
}

/**
 * Faults every fake supports. `failNextWrite` and `loseNextResponse` are one-shot: the next write
 * call consumes them. The reader faults are conditions: they hold until the test sets them back to false.
 */
export interface CommonFaults {
  /** The next write is lost before it reaches the system: throws ETIMEDOUT, nothing changes. */
  failNextWrite: boolean;
  /** The next write is fully processed, then its response is lost: throws ETIMEDOUT, the effect stays. */
  loseNextResponse: boolean;
  /** Reads throw a 503 `EUNAVAILABLE` error (an outage of the read path). */
  readerDown: boolean;
  /** Reads throw a 403 error (the reader's credentials lack access). */
  readerDenied: boolean;
  /** Reads never settle, so only a caller-side timeout can end them. */
  readerHangs: boolean;
}

/** The shape of errors the fakes throw: plain Errors carrying a transport `code` and/or HTTP `status`. */
export type FakeError = Error & { code: string; status?: number };

/** A transport failure (default ETIMEDOUT) that says nothing about whether the request landed. */
export function transportError(where: string, code = 'ETIMEDOUT'): FakeError {
  // Deliberately identical for "lost request" and "lost response": the caller cannot tell them apart.
  return Object.assign(new Error(`${where}: request timed out (${code})`), { code });
}

/** A permission denial, shaped like an HTTP 403. */
export function forbiddenError(where: string): FakeError {
  return Object.assign(new Error(`${where}: forbidden (403)`), { code: 'EFORBIDDEN', status: 403 });
}

/** A service outage, shaped like an HTTP 503. */
export function unavailableError(where: string): FakeError {
  return Object.assign(new Error(`${where}: service unavailable (503)`), {
    code: 'EUNAVAILABLE',
    status: 503,
  });
}

/** Deep copy, so neither callers nor later writes can mutate what a fake returned or recorded. */
export function copy<T>(value: T): T {
  return structuredClone(value);
}

/** Shared plumbing of the fakes: call recording, one-shot fault consumption and the read-path faults. */
export abstract class FakeSystem<F extends CommonFaults> {
  /** Every call made against this fake, in order, with deep-copied arguments. */
  readonly calls: CallRecord[] = [];
  /** Injected faults; set fields directly, e.g. `fake.faults.failNextWrite = true`. */
  readonly faults: F;
  protected readonly clock: Clock;
  private readonly label: string;
  private readonly landings: { landsAt: number; seq: number; land: (at: number) => void }[] = [];
  private landingSeq = 0;

  protected constructor(label: string, options: FakeOptions, faults: F) {
    this.label = label;
    this.clock = options.clock;
    this.faults = faults;
  }

  protected record(method: string, args: unknown[]): CallRecord {
    this.settleLandings();
    const call: CallRecord = { method, args: copy(args), at: this.clock.now() };
    this.calls.push(call);
    return call;
  }

  /** Consumes a one-shot boolean fault if armed, noting on the call that it fired. */
  protected take(call: CallRecord, name: keyof F & string): boolean {
    const faults = this.faults as unknown as Record<string, unknown>;
    if (faults[name] !== true) return false;
    faults[name] = false;
    this.fired(call, name);
    return true;
  }

  protected fired(call: CallRecord, name: string): void {
    call.fault = call.fault ? `${call.fault},${name}` : name;
  }

  protected where(call: CallRecord): string {
    return `${this.label}.${call.method}`;
  }

  /** Queues work that lands at `landsAt`; it is applied lazily, with that timestamp, once the clock passes it. */
  protected landLater(landsAt: number, land: (at: number) => void): void {
    this.landings.push({ landsAt, seq: this.landingSeq++, land });
  }

  /**
   * Applies every late landing that is due, oldest first. There are no real timers, so each call
   * and each effect-log read runs this first: whoever looks after the moment sees the write.
   */
  protected settleLandings(): void {
    const now = this.clock.now();
    for (;;) {
      let best = -1;
      this.landings.forEach((l, i) => {
        const b = this.landings[best];
        if (l.landsAt <= now && (!b || l.landsAt < b.landsAt || (l.landsAt === b.landsAt && l.seq < b.seq))) {
          best = i;
        }
      });
      if (best < 0) return;
      const [due] = this.landings.splice(best, 1);
      due!.land(due!.landsAt);
    }
  }

  /** Applies the reader faults; awaiting it either throws, never returns, or lets the read proceed. */
  protected async readGate(call: CallRecord): Promise<void> {
    if (this.faults.readerDown) {
      this.fired(call, 'readerDown');
      throw unavailableError(this.where(call));
    }
    if (this.faults.readerDenied) {
      this.fired(call, 'readerDenied');
      throw forbiddenError(this.where(call));
    }
    if (this.faults.readerHangs) {
      this.fired(call, 'readerHangs');
      await new Promise<never>(() => {});
    }
  }
}

/** Fresh default values for the common faults. */
export function commonFaults(): CommonFaults {
  return {
    failNextWrite: false,
    loseNextResponse: false,
    readerDown: false,
    readerDenied: false,
    readerHangs: false,
  };
}
