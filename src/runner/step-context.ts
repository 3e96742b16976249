import type { StepContext } from '../contract/types.js';

// A step under a deadline gets `ctx.signal` as a getter, so its AbortController is only built if the step
// reads it (building one costs ~10 µs, more than the rest of a fast step). The getter must be one shared
// function: an object literal with its own `get signal()` makes V8 build a new hidden class per context, kept in
// old space until the next full collection, and that class holds the getter's closure, so everything the closure
// reaches (the drive, its records, the step's promises) survived every minor collection: ~4 KB per action,
// copied and promoted by the scavenger, where the same context with a shared getter leaves ~70 bytes.
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
  get(this: { [LAZY_SIGNAL]: () => AbortSignal }) {
    return this[LAZY_SIGNAL]();
  },
  enumerable: true,
  configurable: true,
};

/**
 * Turns `ctx.signal` into an own, enumerable getter that calls `signal()` (as a literal's `get signal()` would,
 * so spreading the context still copies the signal), without a hidden class of its own per context.
 */
export function withLazySignal(ctx: StepContext, signal: () => AbortSignal): StepContext {
  LAZY_FIELD.value = signal;
  Object.defineProperty(ctx, LAZY_SIGNAL, LAZY_FIELD);
  LAZY_FIELD.value = undefined;
  return Object.defineProperty(ctx, 'signal', SIGNAL_GETTER);
}
