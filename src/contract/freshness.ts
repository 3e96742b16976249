import type { Check, FreshnessRule, StepContext } from './types.js';

type Getter<O, T> = (observed: O) => T;

function toMillis(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Date.parse(value);
  return Number.NaN;
}

/** The observed version must be greater than the baseline read's version (needs a `before` read). */
function versionAbove<O>(getVersion: Getter<O, number | null | undefined>): FreshnessRule<unknown, O> {
  return (observed, ctx) => {
    const name = 'fresh:version_above_baseline';
    const version = getVersion(observed);
    if (ctx.before === undefined) {
      return { name, pass: false, expected: 'a baseline read: declare before()', observed: version };
    }
    // A target that did not exist before has no baseline version: any version is newer.
    const baseline = ctx.before === null ? null : getVersion(ctx.before as O);
    const pass = typeof version === 'number' && (baseline == null || version > baseline);
    return { name, pass, expected: baseline == null ? 'any version' : `> ${baseline}`, observed: version };
  };
}

/** An audit event on the observed record must carry this operation's id. */
function auditEvent<O>(
  getEvents: Getter<O, readonly unknown[] | null | undefined>,
  matches: (event: unknown, ctx: StepContext) => boolean = carriesOperationId,
): FreshnessRule<unknown, O> {
  return (observed, ctx) => {
    const events = getEvents(observed) ?? [];
    const found = events.some((event) => matches(event, ctx));
    return {
      name: 'fresh:audit_event',
      pass: found,
      expected: `an audit event for ${ctx.operationId}`,
      observed: `${events.length} event(s)`,
    };
  };
}

function carriesOperationId(event: unknown, ctx: StepContext): boolean {
  if (event === ctx.operationId) return true;
  if (typeof event !== 'object' || event === null) return false;
  const e = event as { operationId?: unknown; operation_id?: unknown };
  return e.operationId === ctx.operationId || e.operation_id === ctx.operationId;
}

/** The observed update time must be at or after this attempt's start, less `toleranceMs` of clock skew. */
function updatedAfterStart<O>(getUpdatedAt: Getter<O, unknown>, toleranceMs = 0): FreshnessRule<unknown, O> {
  return (observed, ctx) => {
    const updatedAt = toMillis(getUpdatedAt(observed));
    const earliest = ctx.startedAt.getTime() - toleranceMs;
    return {
      name: 'fresh:updated_after_start',
      pass: Number.isFinite(updatedAt) && updatedAt >= earliest,
      expected: `≥ ${new Date(earliest).toISOString()}`,
      observed: Number.isFinite(updatedAt) ? new Date(updatedAt).toISOString() : null,
    };
  };
}

/** The observed content hash must equal the hash of what this input wrote. */
function contentHash<I, O>(
  getHash: Getter<O, string | null | undefined>,
  expectedHash: (input: I) => string,
): FreshnessRule<I, O> {
  return (observed, _ctx, input) => {
    const expected = expectedHash(input);
    const hash = getHash(observed);
    return { name: 'fresh:content_hash', pass: hash === expected, expected, observed: hash ?? null };
  };
}

/** The observed record must carry this operation's idempotency key. */
function idempotencyKeyIn<O>(getKey: Getter<O, string | null | undefined>): FreshnessRule<unknown, O> {
  return (observed, ctx) => {
    const key = getKey(observed);
    return {
      name: 'fresh:idempotency_key',
      pass: key === ctx.idempotencyKey,
      expected: ctx.idempotencyKey,
      observed: key ?? null,
    };
  };
}

/** Every rule must hold; the combined check lists each rule's result. */
function all<I, O>(...rules: FreshnessRule<I, O>[]): FreshnessRule<I, O> {
  return (observed, ctx, input) => {
    const checks: Check[] = rules.map((rule) => asCheck(rule(observed, ctx, input), 'fresh'));
    return { name: 'fresh:all', pass: checks.every((c) => c.pass), observed: checks };
  };
}

/** Normalizes a rule's boolean or Check result into a Check. */
export function asCheck(result: boolean | Check, name: string): Check {
  return typeof result === 'boolean' ? { name, pass: result } : result;
}

/** Ready freshness rules: tell a fresh observation from an old one that merely matches. */
export const freshness = { versionAbove, auditEvent, updatedAfterStart, contentHash, idempotencyKeyIn, all };
