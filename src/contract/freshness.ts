import { ReadbackError } from '../errors.js';
import type { Check, FreshnessRule, StepContext } from './types.js';

type Getter<O, T> = (observed: O) => T;

// A time of day with no zone after it ("2026-11-30 06:00:00", SQLite's CURRENT_TIMESTAMP): Date.parse reads it
// in the server's local zone, so west of UTC an hours-old row would pass as written after the start.
const TIME_OF_DAY = /\d:\d\d/;
// A time of day followed by a zone: Z, an offset (+00, -05:00, +0000) or GMT/UTC/UT.
const ZONED_TIME = /\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*(?:[zZ]|[+-]\d\d(?::?\d\d)?\b|(?:GMT|UTC|UT)\b)/;

// The last millisecond of year 9999. A later update time is not a real one: most often epoch microseconds
// read as milliseconds (year 57 000), which would pass any start; past ±8.64e15 a Date cannot even be printed.
const LATEST_MS = 253_402_300_799_999;
const EARLIEST_MS = -8.64e15;

function toMillis(value: unknown): number {
  let ms: number;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') {
    // Refused rather than guessed at: which zone the writer meant is not in the text.
    ms = TIME_OF_DAY.test(value) && !ZONED_TIME.test(value) ? Number.NaN : Date.parse(value);
  } else return Number.NaN;
  return ms >= EARLIEST_MS && ms <= LATEST_MS ? ms : Number.NaN;
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
  // A NaN or infinite tolerance would fail every read with a RangeError instead of a check.
  if (typeof toleranceMs !== 'number' || !Number.isFinite(toleranceMs) || toleranceMs < 0) {
    throw new ReadbackError(
      'invalid_contract',
      `must be a finite number of milliseconds ≥ 0; got ${String(toleranceMs)}`,
      'freshness.updatedAfterStart(toleranceMs)',
    );
  }
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
    // Two missing hashes (undefined === undefined) prove nothing about what was written.
    const pass = typeof expected === 'string' && expected !== '' && hash === expected;
    return { name: 'fresh:content_hash', pass, expected, observed: hash ?? null };
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
    // Only a boolean true passes, as for a rule on its own: a truthy "false" or a promise proves nothing.
    return { name: 'fresh:all', pass: checks.every((c) => c?.pass === true), observed: checks };
  };
}

/** Normalizes a rule's boolean or Check result into a Check. */
export function asCheck(result: boolean | Check, name: string): Check {
  return typeof result === 'boolean' ? { name, pass: result } : result;
}

/** Ready freshness rules: tell a fresh observation from an old one that merely matches. */
export const freshness = { versionAbove, auditEvent, updatedAfterStart, contentHash, idempotencyKeyIn, all };
