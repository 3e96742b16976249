import { plainEqual, toPlain } from '../canonical.js';
import { asCheck } from './freshness.js';
import type { Action, Check, Expectation, StepContext, Unit, UnitSummary } from './types.js';

/** What one observation says about the postcondition. */
export type Verdict = 'pass' | 'partial' | 'mismatch' | 'stale' | 'wrong_scope';

/** The checks run on one observation, and the verdict they add up to. */
export interface Evaluation {
  verdict: Verdict;
  checks: Check[];
  units?: UnitSummary;
  evidence: Record<string, unknown>;
}

/** Thrown when `expect` returns something that cannot be checked; the runner reports `unknown`. */
export class InvalidExpectation extends Error {}

const MAX_EVIDENCE_UNITS = 20;

/**
 * Runs the scope check, the expected fields/checks/units and (unless `baseline`) the freshness rule.
 * A baseline read skips freshness: it asks whether the target already holds, not whether we changed it.
 */
export function evaluate<I, O>(
  action: Action<I, O>,
  input: I,
  observed: O,
  ctx: StepContext,
  options: { baseline?: boolean } = {},
): Evaluation {
  const scopeCheck = checkScope(action, observed, ctx);
  if (scopeCheck && !scopeCheck.pass) {
    return { verdict: 'wrong_scope', checks: [scopeCheck], evidence: { scope: scopeCheck.observed } };
  }
  const expectation = action.expect?.(input, observed, ctx);
  const { checks, units, evidence } = normalize(expectation, observed);
  if (scopeCheck) checks.unshift(scopeCheck);

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
  if (freshCheck) evidence.fresh = freshCheck.observed ?? freshCheck.pass;
  return { verdict, checks, ...(units ? { units } : {}), evidence };
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
  if (typeof (result as { then?: unknown }).then === 'function') {
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

function checkScope<I, O>(action: Action<I, O>, observed: O, ctx: StepContext): Check | undefined {
  if (!action.scopeOf) return undefined;
  const observedScope = action.scopeOf(observed) ?? {};
  const wanted = ctx.scope;
  const pass = Object.keys(wanted).every((key) => observedScope[key] === wanted[key]);
  return { name: 'scope', pass, expected: wanted, observed: observedScope };
}

function normalize(
  expectation: Expectation | undefined,
  observed: unknown,
): { checks: Check[]; units?: UnitSummary; evidence: Record<string, unknown> } {
  if (Array.isArray(expectation)) {
    if (expectation.length === 0) throw new InvalidExpectation('expect() returned an empty list');
    if (expectation.every(isUnit)) return unitChecks(expectation);
    if (expectation.every(isCheck)) {
      const checks = expectation.map((c) => ({ ...c }));
      return { checks, evidence: Object.fromEntries(checks.map((c) => [c.name, c.observed])) };
    }
    throw new InvalidExpectation('expect() returned a list that is neither all checks nor all units');
  }
  if (typeof expectation !== 'object' || expectation === null) {
    throw new InvalidExpectation(`expect() returned ${expectation === null ? 'null' : typeof expectation}`);
  }
  const names = Object.keys(expectation);
  if (names.length === 0) throw new InvalidExpectation('expect() returned no expected fields');
  if (typeof observed !== 'object' || observed === null) {
    throw new InvalidExpectation('expected fields, but the observation is not a record');
  }
  const record = observed as Record<string, unknown>;
  const checks: Check[] = [];
  const evidence: Record<string, unknown> = {};
  // One pass over the fields, without the pair arrays of Object.entries and fromEntries.
  for (const name of names) {
    const expected = (expectation as Record<string, unknown>)[name];
    const seen = record[name];
    checks.push({ name, pass: plainEqual(seen, expected), expected, observed: seen });
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

function unitChecks(units: Unit[]): {
  checks: Check[];
  units: UnitSummary;
  evidence: Record<string, unknown>;
} {
  const checks = units.map((unit) => ({
    name: `unit:${unit.target}`,
    pass:
      unit.observed !== null &&
      Object.entries(unit.expected).every(([key, value]) => plainEqual(unit.observed?.[key], value)),
    expected: unit.expected,
    observed: unit.observed,
  }));
  const failedTargets = units.filter((_, i) => !checks[i]?.pass).map((u) => u.target);
  const summary = {
    required: units.length,
    passed: units.length - failedTargets.length,
    failed: failedTargets.length,
    failedTargets,
  };
  const failedObserved = Object.fromEntries(
    units
      .filter((_, i) => !checks[i]?.pass)
      .slice(0, MAX_EVIDENCE_UNITS)
      .map((u) => [u.target, u.observed]),
  );
  return { checks, units: summary, evidence: { units: summary, failedObserved } };
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
