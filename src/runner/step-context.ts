import type { StepContext } from '../contract/types.js';
import type { LazySignal } from './timeout.js';

// A step under a deadline gets `ctx.signal` as a getter, so its AbortController is only built if the step
// reads it (building one costs ~4 µs, more than the rest of a fast step). The getter must be one shared
// function: an object literal with its own `get signal()` makes V8 build a new hidden class per context, kept in
// old space until the next full collection, and that class holds the getter's closure, so everything the closure
// reaches (the drive, its records, the step's promises) survived every minor collection: ~4 KB per action,
// copied and promoted by the scavenger, where the same context with a shared getter leaves ~70 bytes.
// The getter is added as a new property, never by redefining a data property: V8 turns an object whose data
// property becomes an accessor into a slow dictionary (~1.4 µs to build, slower to read), while adding one
// follows a shared hidden-class transition (~0.35 µs).
const LAZY_SIGNAL = Symbol('readback.lazySignal');
// Reused for every context (filled in, used and cleared synchronously) so defining the hidden field allocates
// no descriptor.
const LAZY_FIELD: PropertyDescriptor = {
  value: undefined,
  writable: false,
  enumerable: false,
  configurable: false,
};
const SIGNAL_GETTER: PropertyDescriptor = {
  get(this: { [LAZY_SIGNAL]: LazySignal }) {
    return this[LAZY_SIGNAL].signal();
  },
  enumerable: true,
  configurable: true,
};

/** The step context's own facts, without its signal. */
export type StepFacts = Omit<StepContext, 'signal' | 'actor' | 'before'>;

/**
 * Builds a step context whose `signal` is an own, enumerable getter that calls `lazy.signal()` (as a literal's
 * `get signal()` would, so spreading the context still copies the signal), in the place a literal would put
 * it, without a hidden class of its own per context.
 */
export function withLazySignal(facts: StepFacts, lazy: LazySignal): StepContext {
  const ctx = { runId: facts.runId, scope: facts.scope } as StepContext;
  Object.defineProperty(ctx, 'signal', SIGNAL_GETTER);
  ctx.operationId = facts.operationId;
  ctx.idempotencyKey = facts.idempotencyKey;
  ctx.attempt = facts.attempt;
  ctx.startedAt = facts.startedAt;
  LAZY_FIELD.value = lazy;
  Object.defineProperty(ctx, LAZY_SIGNAL, LAZY_FIELD);
  LAZY_FIELD.value = undefined;
  return ctx;
}
