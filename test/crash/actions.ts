// The three actions the crash runs drive, over the fake target: one safe to repeat (a deduplicating
// ledger), one not (a bare counter increment), one accepted (a job the provider finishes later).
// Hooks let a child kill itself at a named point; the test process passes none.
import { type AnyAction, accepted, defineAction, type StandardSchemaV1 } from '../../src/index.js';
import type { JobState, Target } from './target.js';

/** One operation of a crash run, as the test generates it and a child runs it. */
export type CrashOp =
  | { kind: 'ledger'; key: string; amount: number }
  | { kind: 'bump'; key: string }
  | { kind: 'job'; key: string; durationMs: number; outcome: 'succeeded' | 'failed' };

/** Where a child may be told to die. */
export interface Hooks {
  afterEffect?(key: string, attempt: number): void;
  inObserve?(key: string, phase: 'before' | 'after'): void;
}

/** Short timings so a crash run and its recovery take a second or two of real time. */
export const TIMING = {
  maxInFlightMs: 200,
  executeTimeoutMs: 500,
  verifyTimeoutMs: 2_000,
  poll: { maxDurationMs: 800, maxReads: 40, initialDelayMs: 20, maxDelayMs: 50, jitter: 0.5 },
};

// Inputs come from the test itself; a pass-through Standard Schema keeps the children free of zod.
function passThrough<T>(): StandardSchemaV1<unknown, T> {
  return { '~standard': { version: 1, vendor: 'crash-test', validate: (value) => ({ value: value as T }) } };
}

type Ledger = Extract<CrashOp, { kind: 'ledger' }>;
type Bump = Extract<CrashOp, { kind: 'bump' }>;
type Job = Extract<CrashOp, { kind: 'job' }>;

/** The actions over one target, with the child's failpoint hooks. */
export function crashActions(target: Target, hooks: Hooks = {}) {
  const observing = <T>(key: string, read: () => T): T => {
    hooks.inObserve?.(key, 'before');
    const value = read();
    hooks.inObserve?.(key, 'after');
    return value;
  };

  const ledger = defineAction<Ledger, { amount: number }>({
    name: 'crash.ledger',
    description: 'Posts an amount to the ledger under the idempotency key',
    postcondition: 'the ledger holds the entry with the amount',
    input: passThrough<Ledger>(),
    target: (i) => `ledger:${i.key}`,
    idempotencyKey: (i) => i.key,
    safeToRepeat: true,
    ...TIMING,
    execute(i, ctx) {
      target.ledgerPost(i.key, i.amount, ctx.attempt);
      hooks.afterEffect?.(i.key, ctx.attempt);
      return { ok: true };
    },
    observe: (i) => observing(i.key, () => target.ledgerRead(i.key)),
    expect: (i) => ({ amount: i.amount }),
  });

  const bump = defineAction<Bump, { value: number }>({
    name: 'crash.bump',
    description: 'Increments a counter once; the provider has no dedupe',
    postcondition: 'the counter is exactly 1',
    input: passThrough<Bump>(),
    target: (i) => `counter:${i.key}`,
    idempotencyKey: (i) => i.key,
    safeToRepeat: false,
    ...TIMING,
    execute(i, ctx) {
      target.bump(i.key, ctx.attempt);
      hooks.afterEffect?.(i.key, ctx.attempt);
      return { ok: true };
    },
    observe: (i) => observing(i.key, () => target.counterRead(i.key)),
    expect: () => ({ value: 1 }),
  });

  const job = defineAction<Job, { state: JobState }>({
    name: 'crash.job',
    description: 'Enqueues a job the provider finishes later',
    postcondition: 'the job finished successfully',
    mode: 'accepted',
    input: passThrough<Job>(),
    target: (i) => `job:${i.key}`,
    idempotencyKey: (i) => i.key,
    safeToRepeat: true,
    ...TIMING,
    execute(i, ctx) {
      target.enqueue(i.key, i.durationMs, i.outcome, ctx.attempt);
      hooks.afterEffect?.(i.key, ctx.attempt);
      return accepted(i.key);
    },
    observe: (i) => observing(i.key, () => target.jobRead(i.key)),
    terminal: (o) => o.state,
    expect: () => ({ state: 'succeeded' }),
  });

  const byKind: Record<CrashOp['kind'], AnyAction> = { ledger, bump, job };
  return { ledger, bump, job, all: [ledger, bump, job], byKind };
}
