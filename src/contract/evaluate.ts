import { plainEqual, toPlain } from '../canonical.js';
import { asCheck } from './freshness.js';
import type { Action, Check, Expectation, StepContext, Unit, UnitSummary } from './types.js';

/** What one observation says about the postcondition. */
export type Verdict = 'pass' | 'partial' | 'mismatch' | 'stale' | 'wrong_scope' | 'wrong_target';

/** The checks run on one observation, and the verdict they add up to. */
export interface Evaluation {
  verdict: Verdict;
  checks: Check[];
  units?: UnitSummary;
  evidence: Record<string, unknown>;
  /** Whether the freshness rule passed; absent when none ran (no rule, or a baseline read). */
  fresh?: boolean;
  /** A baseline's unfinished job (accepted mode): it proves no end state, and the target is busy with it. */
  running?: true;
}

/** Thrown when `expect` returns something that cannot be checked; the runner reports `unknown`. */
export class InvalidExpectation extends Error {}

const MAX_EVIDENCE_UNITS = 20;

/** How `evaluate` reads: as a baseline (no freshness rule), and for which operation target. */
export interface EvaluateOptions {
  baseline?: boolean;
  /** The operation's target (`record.target`), which `targetOf` must return; default `target(input)`. */
  target?: string;
}

/**
 * Runs the target and scope checks, the expected fields/checks/units and (unless `baseline`) the freshness
 * rule. A baseline read skips freshness: it asks whether the target already holds, not whether we changed it.
 */
export function evaluate<I, O>(
  action: Action<I, O>,
  input: I,
  observed: O,
  ctx: StepContext,
  options: EvaluateOptions = {},
): Evaluation {
  const identity = identify(action, input, observed, ctx, options.target);
  if (identity.check && !identity.check.pass) return wrongTarget(identity.check);
  const targetCheck = identity.check;
  const scopeCheck = checkScope(action, observed, ctx);
  if (scopeCheck && !scopeCheck.pass) return wrongScope(scopeCheck);
  const leading = [targetCheck, scopeCheck].filter((c): c is Check => c !== undefined);
  // Only finished work can show the requested end state holds. A failed job did not do it, whatever fields it
  // carries: a no_op would never run the work. A running job (another run's, an earlier request's) may still
  // fail: a no_op would claim what is not done, and executing over it could double it (the drive refuses).
  if (options.baseline && action.mode === 'accepted' && action.terminal) {
    const state = action.terminal(observed);
    if (state === 'failed' || state === 'running') {
      const check: Check = { name: 'terminal', pass: false, expected: 'succeeded', observed: state };
      return {
        verdict: 'mismatch',
        checks: [...leading, check],
        evidence: { terminal: state },
        ...(state === 'running' ? { running: true as const } : {}),
      };
    }
    // Anything else ('queued', undefined) tells nothing about the work, as a poll read would refuse it.
    if (state !== 'succeeded') throw new InvalidExpectation(`terminal() returned ${String(state)}`);
  }
  if (identity.expectError) throw identity.expectError.error;
  const expectation = identity.expected ? identity.expected.value : action.expect?.(input, observed, ctx);
  const { checks, units, evidence } = normalize(expectation, observed, action.targetOf);
  if (leading.length > 0) checks.unshift(...leading);

  let freshCheck: Check | undefined;
  if (action.fresh && !options.baseline) {
    freshCheck = freshnessCheck(action.fresh(observed, ctx, input));
    checks.push(freshCheck);
  }
  let verdict: Verdict;
  if (units) {
    verdict = units.failed === 0 ? 'pass' : units.passed === 0 ? 'mismatch' : 'partial';
  } else {
    verdict = checks.every((c) => c === freshCheck || c.pass) ? 'pass' : 'mismatch';
  }
  // A matching record that is not provably fresh may be the old state: it proves nothing either way.
  if (verdict === 'pass' && freshCheck && !freshCheck.pass) verdict = 'stale';
  if (!freshCheck) return { verdict, checks, ...(units ? { units } : {}), evidence };
  evidence.fresh = freshCheck.observed ?? freshCheck.pass;
  return { verdict, checks, ...(units ? { units } : {}), evidence, fresh: freshCheck.pass };
}

/** The action's freshness rule judged on its own (undefined when it has none), e.g. for a failed job. */
export function freshnessOf<I, O>(
  action: Action<I, O>,
  input: I,
  observed: O,
  ctx: StepContext,
): Check | undefined {
  return action.fresh ? freshnessCheck(action.fresh(observed, ctx, input)) : undefined;
}

// A hand-written rule may return anything: only a boolean, or a check with a boolean `pass`, decides. An
// unnamed check is named `fresh`, as a boolean is; a promise (an async rule) could never be awaited here.
function freshnessCheck(result: unknown): Check {
  if (typeof result === 'boolean' || typeof result !== 'object' || result === null) {
    if (typeof result === 'boolean') return asCheck(result, 'fresh');
    throw new InvalidExpectation(
      `fresh() returned ${result === null ? 'null' : typeof result}, not a boolean or a check`,
    );
  }
  if (isThenable(result)) {
    throw new InvalidExpectation(
      'fresh() returned a promise; freshness must be decided from the observation at once',
    );
  }
  const check = result as Partial<Check>;
  if (typeof check.pass !== 'boolean')
    throw new InvalidExpectation('fresh() returned a check without a boolean "pass"');
  return typeof check.name === 'string' && check.name !== ''
    ? (check as Check)
    : ({ ...check, name: 'fresh' } as Check);
}

/**
 * The wrong-scope evaluation when an unfinished job states another scope than the run's; undefined otherwise.
 * Such a job may not carry its scope yet (a value missing, or scopeOf unable to read it): that proves nothing.
 */
export function statedScopeMismatch<I, O>(
  action: Action<I, O>,
  observed: O,
  ctx: StepContext,
): Evaluation | undefined {
  let scopeCheck: Check | undefined;
  try {
    scopeCheck = checkScope(action, observed, ctx);
  } catch {
    return undefined;
  }
  if (!scopeCheck || scopeCheck.pass) return undefined;
  const seen = scopeCheck.observed as Record<string, unknown>;
  const stated = Object.keys(ctx.scope).some(
    (key) => seen[key] !== undefined && seen[key] !== null && !sameScopeValue(seen[key], ctx.scope[key]),
  );
  return stated ? wrongScope(scopeCheck) : undefined;
}

/**
 * The wrong-target evaluation when `targetOf` names another record than the operation's target; undefined
 * when it names ours, or the action has no `targetOf`, or `expect` returns batch units (each checked on its own).
 */
export function misdirected<I, O>(
  action: Action<I, O>,
  input: I,
  observed: O,
  ctx: StepContext,
  target: string,
): Evaluation | undefined {
  const { check } = identify(action, input, observed, ctx, target);
  return check && !check.pass ? wrongTarget(check) : undefined;
}

interface Identity {
  check?: Check;
  /** What `expect` returned, computed early to tell a batch (units carry their own targets) from one record. */
  expected?: { value: Expectation | undefined };
  /** What `expect` threw: raised after the target check, so a misdirected read is named as such first. */
  expectError?: { error: unknown };
}

function identify<I, O>(
  action: Action<I, O>,
  input: I,
  observed: O,
  ctx: StepContext,
  target: string | undefined,
): Identity {
  if (!action.targetOf) return {};
  const out: Identity = {};
  try {
    out.expected = { value: action.expect?.(input, observed, ctx) };
  } catch (error) {
    out.expectError = { error };
  }
  // A batch's observation is a collection: targetOf reads each unit's record instead (see unitChecks). An
  // empty list (an empty batch) has no record to name: it is refused as such, not read as another target.
  const value = out.expected?.value;
  if (Array.isArray(value) && value.every(isUnit)) return out;
  out.check = targetCheck(action.targetOf, observed, target ?? action.target(input));
  return out;
}

// Called at once, like scopeOf: an async targetOf gives a promise, never the record's identifier, and a throw
// decides nothing about whose record this is. Both are a contract fault (invalid_expectation), not a read error.
function targetCheck<O>(
  targetOf: (observed: O) => string,
  observed: O,
  wanted: string,
  name = 'target',
): Check {
  let found: unknown;
  try {
    found = targetOf(observed);
  } catch (error) {
    throw new InvalidExpectation(`targetOf() threw: ${thrownText(error)}`);
  }
  if (typeof found !== 'string') {
    // Nobody awaits it: a rejection must not surface later as an unhandled one.
    if (isThenable(found)) (found as PromiseLike<unknown>).then(undefined, () => {});
    const what = isThenable(found) ? 'a promise' : found === null ? 'null' : typeof found;
    throw new InvalidExpectation(
      `targetOf() returned ${what}; it must return the observed record's target identifier at once, as a string`,
    );
  }
  return { name, pass: found === wanted, expected: wanted, observed: found };
}

function thrownText(error: unknown): string {
  try {
    return error instanceof Error ? error.message || error.name : String(error);
  } catch {
    return 'an unprintable error';
  }
}

function wrongTarget(check: Check): Evaluation {
  return { verdict: 'wrong_target', checks: [check], evidence: { target: check.observed } };
}

function wrongScope(scopeCheck: Check): Evaluation {
  return { verdict: 'wrong_scope', checks: [scopeCheck], evidence: { scope: scopeCheck.observed } };
}

function checkScope<I, O>(action: Action<I, O>, observed: O, ctx: StepContext): Check | undefined {
  if (!action.scopeOf) return undefined;
  const found: unknown = action.scopeOf(observed);
  // An async scopeOf gives a promise, whose fields are never the tenant's: every landed write would fail as
  // another scope, and the agent be told to ask the user about a tenant it never touched.
  if (isThenable(found) || (found !== undefined && (typeof found !== 'object' || found === null))) {
    throw new InvalidExpectation(
      `scopeOf() returned ${isThenable(found) ? 'a promise' : found === null ? 'null' : typeof found}; it must return the record's scope at once, as an object`,
    );
  }
  const observedScope = (found ?? {}) as Record<string, unknown>;
  const wanted = ctx.scope;
  const pass = Object.keys(wanted).every((key) => sameScopeValue(observedScope[key], wanted[key]));
  return { name: 'scope', pass, expected: wanted, observed: observedScope };
}

// A numeric id column (tenant_id 42) is the same tenant as the run's "42": calling it another scope would fail
// an effect that landed, and invite a retry.
function sameScopeValue(seen: unknown, wanted: string | undefined): boolean {
  return seen === wanted || (typeof seen === 'number' && String(seen) === wanted);
}

function normalize(
  expectation: Expectation | undefined,
  observed: unknown,
  targetOf: ((observed: never) => string) | undefined,
): { checks: Check[]; units?: UnitSummary; evidence: Record<string, unknown> } {
  if (Array.isArray(expectation)) {
    if (expectation.length === 0) throw new InvalidExpectation('expect() returned an empty list');
    if (expectation.every(isUnit)) return unitChecks(expectation, targetOf);
    if (expectation.every(isCheck)) {
      const checks = expectation.map((c) => ({ ...c }));
      return { checks, evidence: Object.fromEntries(checks.map((c) => [c.name, c.observed])) };
    }
    throw new InvalidExpectation('expect() returned a list that is neither all checks nor all units');
  }
  if (typeof expectation !== 'object' || expectation === null) {
    throw new InvalidExpectation(`expect() returned ${expectation === null ? 'null' : typeof expectation}`);
  }
  if (isThenable(expectation)) {
    throw new InvalidExpectation('expect() returned a promise; it must judge the observation at once');
  }
  const names = Object.keys(expectation);
  if (names.length === 0) throw new InvalidExpectation('expect() returned no expected fields');
  // A list (a query's rows, empty when the target is missing) or a Map has no fields to read: `{ owner: null }`
  // would pass on [] or on any Map.
  if (
    typeof observed !== 'object' ||
    observed === null ||
    Array.isArray(observed) ||
    observed instanceof Map
  ) {
    throw new InvalidExpectation('expected fields, but the observation is not a record');
  }
  const record = observed as Record<string, unknown>;
  const checks: Check[] = [];
  const evidence: Record<string, unknown> = {};
  // One pass over the fields, without the pair arrays of Object.entries and fromEntries.
  for (const name of names) {
    const expected = (expectation as Record<string, unknown>)[name];
    const seen = record[name];
    checks.push({ name, pass: fieldEqual(name, seen, expected), expected, observed: seen });
    setField(evidence, name, toPlain(seen));
  }
  return { checks, evidence };
}

// A field named "__proto__" must stay an own key of the evidence, as fromEntries kept it.
function setField(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

function unitChecks(
  units: Unit[],
  targetOf: ((observed: never) => string) | undefined,
): {
  checks: Check[];
  units: UnitSummary;
  evidence: Record<string, unknown>;
} {
  // A unit whose record is another target's (a misrouted lookup) fails, and a check after the unit checks says so.
  const misdirected: Check[] = [];
  const checks = units.map((unit) => {
    const observed = unit.observed;
    // `rows.find(...)` gives undefined for a missing row, `rows.filter(...)` an empty list: absent, like null,
    // or `{ owner: null }` would pass.
    const found = typeof observed === 'object' && observed !== null && !Array.isArray(observed);
    const identity =
      found && targetOf
        ? targetCheck(targetOf, observed as never, unit.target, `unit:${unit.target}:target`)
        : undefined;
    if (identity && !identity.pass) misdirected.push(identity);
    return {
      name: `unit:${unit.target}`,
      pass:
        found &&
        identity?.pass !== false &&
        Object.entries(unit.expected).every(([key, value]) =>
          fieldEqual(`${unit.target}.${key}`, observed[key], value),
        ),
      expected: unit.expected,
      observed: found ? observed : null,
    };
  });
  // A target named by several units (an id listed twice) is one unit, with one check: the first failing one,
  // else its first. Counting each would report it twice, or as both passed and failed.
  const byTarget = new Map<string, number>();
  checks.forEach((check, i) => {
    const seen = byTarget.get(units[i]!.target);
    if (seen === undefined || (checks[seen]!.pass && !check.pass)) byTarget.set(units[i]!.target, i);
  });
  const kept = [...byTarget.values()];
  const failed = kept.filter((i) => !checks[i]!.pass);
  const failedTargets = failed.map((i) => units[i]!.target);
  const summary = {
    required: kept.length,
    passed: kept.length - failed.length,
    failed: failed.length,
    failedTargets,
  };
  const failedObserved = Object.fromEntries(
    failed.slice(0, MAX_EVIDENCE_UNITS).map((i) => [units[i]!.target, units[i]!.observed]),
  );
  return {
    checks: [...kept.map((i) => checks[i]!), ...misdirected],
    units: summary,
    evidence: { units: summary, failedObserved },
  };
}

// The canonical form writes an instance with no own fields (a URL, a Temporal time, an Error) as `{}`, so any
// two such values compare equal: a match on one proves nothing, and the expectation is refused instead.
// Only an expected object can match one, so a primitive expectation (the usual field) costs one typeof.
function fieldEqual(name: string, seen: unknown, expected: unknown): boolean {
  // An expected `undefined` (an input field the call left out, or misspelt) matches any record lacking the
  // field: it would pass without reading anything. A field that must be empty is expected as null.
  if (expected === undefined) {
    throw new InvalidExpectation(
      `"${name}" is expected as undefined, which any record without the field matches; expect null for an empty field, or leave "${name}" out`,
    );
  }
  if (!plainEqual(seen, expected)) return false;
  // The very same object (an expectation read from the observation) is equal whatever it holds.
  if (typeof expected !== 'object' || expected === null || seen === expected) return true;
  const found = opaqueIn(expected, 0) ?? opaqueIn(seen, 0);
  if (found !== undefined) {
    throw new InvalidExpectation(
      `"${name}" compares a ${found} with no own fields, which readback cannot tell apart from another; expect plain data (a string, say)`,
    );
  }
  return true;
}

// The class name of the first instance without own fields inside `value`, if any.
function opaqueIn(value: unknown, depth: number): string | undefined {
  if (typeof value !== 'object' || value === null || depth > 100 || value instanceof Date) return undefined;
  const items = Array.isArray(value)
    ? value
    : value instanceof Map || value instanceof Set
      ? [...value.values()]
      : undefined;
  if (items) {
    for (const item of items) {
      const found = opaqueIn(item, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  const keys = Object.keys(value);
  const proto = Object.getPrototypeOf(value);
  if (keys.length === 0 && proto !== Object.prototype && proto !== null) {
    return (proto as { constructor?: { name?: unknown } }).constructor?.name?.toString() || 'object';
  }
  for (const key of keys) {
    const found = opaqueIn((value as Record<string, unknown>)[key], depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

function isThenable(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
  );
}

function isUnit(value: unknown): value is Unit {
  if (typeof value !== 'object' || value === null) return false;
  const u = value as Partial<Unit>;
  return (
    typeof u.target === 'string' && typeof u.expected === 'object' && u.expected !== null && 'observed' in u
  );
}

function isCheck(value: unknown): value is Check {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Partial<Check>;
  return typeof c.name === 'string' && typeof c.pass === 'boolean';
}
