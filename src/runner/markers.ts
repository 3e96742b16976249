const MARK = Symbol.for('readback.marker');

/** What `execute` returns to report a known rejection: nothing was applied. */
export interface Rejected {
  readonly [MARK]: 'rejected';
  code: string;
  reason: string;
  raw?: unknown;
}

/** What `execute` returns to report that the work was only accepted (queued), with the provider's reference. */
export interface Accepted {
  readonly [MARK]: 'accepted';
  ref: unknown;
  raw?: unknown;
}

/** Marks a known rejection from the provider (validation, business rule, conflict): the runner reports `failed`. */
export function rejected(code: string, reason: string, raw?: unknown): Rejected {
  return { [MARK]: 'rejected', code, reason, raw };
}

/** Marks accepted-but-unfinished work: the runner polls the real effect instead of trusting the acceptance. */
export function accepted(ref?: unknown, raw?: unknown): Accepted {
  return { [MARK]: 'accepted', ref: ref ?? null, raw };
}

/** True for a value made by `rejected`. */
export function isRejected(value: unknown): value is Rejected {
  return markOf(value) === 'rejected';
}

/** True for a value made by `accepted`. */
export function isAccepted(value: unknown): value is Accepted {
  return markOf(value) === 'accepted';
}

// Raw results come from arbitrary SDKs; a strict proxy that throws on unknown keys is simply unmarked.
function markOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return undefined;
  try {
    return (value as { [MARK]?: unknown })[MARK];
  } catch {
    return undefined;
  }
}
