import type { Evaluation } from '../contract/evaluate.js';
import type { Check } from '../contract/types.js';
import type { Outcome } from './outcome.js';
import type { Reading } from './readback.js';

/** What an observation proved, as the facts of a settled outcome; undefined when it proved nothing final. */
export type SettledFacts = Partial<Outcome> & Pick<Outcome, 'status'>;

/** The checks, evidence and time of one judged observation. */
export function seenFacts(
  evaluation: Evaluation,
  at: number,
): Pick<Outcome, 'checks' | 'evidence' | 'observedAt'> {
  return { checks: evaluation.checks, evidence: evaluation.evidence, observedAt: at };
}

/**
 * Maps a verdict that settles the operation (pass, partial, wrong scope, wrong target) to its outcome facts.
 * A wrong target settles as `unknown`: the read was of another record, so it proves nothing about ours either
 * way, and reading again through the same misdirected verifier cannot tell more.
 */
export function settledByVerdict(evaluation: Evaluation, at: number): SettledFacts | undefined {
  const { checks, evidence } = evaluation;
  switch (evaluation.verdict) {
    case 'pass':
      // One literal per verdict (a spread of the seen facts made a second object on every settle).
      return { checks, evidence, observedAt: at, status: 'verified', units: evaluation.units };
    case 'partial':
      return {
        checks,
        evidence,
        observedAt: at,
        status: 'partial',
        units: evaluation.units,
        errorCode: 'readback_mismatch',
        reason: `${evaluation.units?.failed} of ${evaluation.units?.required} units did not apply`,
      };
    case 'wrong_scope':
      return {
        checks,
        evidence,
        observedAt: at,
        status: 'failed',
        errorCode: 'wrong_scope',
        reason: 'observed in another scope',
      };
    case 'wrong_target':
      return {
        checks,
        evidence,
        observedAt: at,
        status: 'unknown',
        errorCode: 'wrong_target',
        reason: `the read returned the record of ${JSON.stringify(checks[0]?.observed)}, not of ${JSON.stringify(checks[0]?.expected)}; it proves nothing about this operation's target`,
      };
    default:
      return undefined;
  }
}

/** True when re-reading within a settle window cannot change what this observation decided. */
export function isSettledVerdict(reading: Extract<Reading, { kind: 'observed' }>): boolean {
  const verdict = reading.evaluation?.verdict;
  return verdict === 'pass' || verdict === 'wrong_scope' || verdict === 'wrong_target';
}

// Built-in rules that only this operation's own write can pass. A newer version or update time could be anyone's,
// a content hash any earlier call's with the same input, and a hand-written rule says nothing of whose write it saw.
const OPERATION_TIED = new Set(['fresh:audit_event', 'fresh:idempotency_key']);

/** True when a passing freshness check proves the record carries this operation's own write. */
export function tiedToOperation(checks: Check[]): boolean {
  return checks.some(
    (c) =>
      c?.pass === true &&
      (OPERATION_TIED.has(c.name) ||
        (c.name === 'fresh:all' && Array.isArray(c.observed) && tiedToOperation(c.observed as Check[]))),
  );
}

/**
 * The facts of a read that contradicts the postcondition: its checks and the reason naming the failed ones, or
 * for a batch whose units all failed, the units that failed (as a partial batch reports them).
 */
export function mismatchFacts(
  evaluation: Evaluation,
  at: number,
): Pick<Outcome, 'checks' | 'evidence' | 'observedAt' | 'units'> & { reason: string } {
  const { checks, evidence, units } = evaluation;
  if (!units) return { checks, evidence, observedAt: at, reason: failedNames(checks) };
  return {
    checks,
    evidence,
    observedAt: at,
    units,
    reason: `${units.failed} of ${units.required} units did not apply`,
  };
}

/** The reason text for a mismatch, naming the checks that failed. */
function failedNames(checks: Check[] | undefined): string {
  const failed = (checks ?? []).filter((c) => !c.pass).map((c) => c.name);
  return failed.length ? `read back did not match: ${failed.join(', ')}` : 'read back did not match';
}

/** The reason text for a read that matched but could not be shown fresh. */
export function staleReason(checks: Check[] | undefined): string {
  const failed = (checks ?? []).filter((c) => !c.pass && c.name.startsWith('fresh')).map((c) => c.name);
  return `the read matched but could not be proven fresh (${failed.join(', ') || 'freshness'}); it may be an old copy`;
}

/** A one-line summary of a reading for the event log. */
export function summarizeReading(reading: Reading): Record<string, unknown> {
  if (reading.kind === 'error') return { read: 'error', code: reading.code };
  if (reading.kind === 'absent') return { read: 'absent' };
  return {
    read: 'observed',
    terminal: reading.terminal ?? null,
    verdict: reading.evaluation?.verdict ?? null,
  };
}
