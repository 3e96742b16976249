/**
 * Marks a run context whose input a framework already parsed with the action's own schema (the schema's output,
 * not the raw arguments). The runner then takes the input as validated instead of parsing it again, which would
 * run the schema's transforms a second time (a prefixing transform would write `ticket:ticket:…`). Set only by
 * readback's integrations, and only where they handed the framework that very schema.
 */
export const PREVALIDATED: unique symbol = Symbol('readback.prevalidated');

/** A run context that may carry the `PREVALIDATED` mark. */
export type MaybePrevalidated = { [PREVALIDATED]?: true };

/** Marks `ctx` as carrying input a framework already parsed with the action's own schema; returns it. */
export function prevalidated<C extends object>(ctx: C): C {
  (ctx as MaybePrevalidated)[PREVALIDATED] = true;
  return ctx;
}
