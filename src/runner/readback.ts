import { requirePlain, UnusableValue } from '../canonical.js';
import type { Clock } from '../clock.js';
import {
  type Evaluation,
  evaluate,
  freshnessOf,
  InvalidExpectation,
  misdirected,
  statedScopeMismatch,
} from '../contract/evaluate.js';
import type { AnyAction, StepContext, TerminalState } from '../contract/types.js';
import { isDenial } from '../errors.js';
import { type LazySignal, StepTimeout, withDeadline } from './timeout.js';

/** Builds a step context whose `signal` is read through the given lazy signal. */
export type StepContextFactory = (signal?: LazySignal) => StepContext;

/** Codes for a read that could not tell us anything about the effect. */
export type ReadErrorCode =
  | 'verifier_unavailable'
  | 'verification_denied'
  | 'verifier_timeout'
  | 'unusable_observation'
  | 'invalid_expectation'
  | 'aborted';

/** One authoritative read and what it says. */
export type Reading =
  | { kind: 'error'; at: number; code: ReadErrorCode; reason: string }
  | { kind: 'absent'; at: number }
  | { kind: 'observed'; at: number; terminal?: TerminalState; evaluation: Evaluation | null };

/**
 * Calls the action's `observe` with a deadline (`ms`, the action's `verifyTimeoutMs` unless a poll budget or
 * settle window ending sooner cuts it) and judges the result.
 * In accepted mode the terminal classification comes first and only finished work is checked.
 * Nothing a verifier returns or throws escapes as an exception: every problem becomes an error reading.
 */
export function readOnce(
  clock: Clock,
  action: AnyAction,
  input: unknown,
  makeCtx: StepContextFactory,
  /** The operation's target (`record.target`), which the action's `targetOf` must name. */
  target: string,
  /** The read's step deadline: `verifyTimeoutMs`, or less near the end of a poll budget or settle window. */
  ms: number,
  /** Sees the reading before it is returned (the trace), inside the same `then`: no promise of its own. */
  onReading?: (reading: Reading) => void,
): Promise<Reading> {
  const ctx = makeCtx();
  const observe = action.observe;
  if (!observe) return Promise.reject(new Error('readOnce called for an action without observe'));
  // One `then` on the deadline's promise rather than an async function: every read passes here.
  return withDeadline(clock, 'observe', ms, ctx.signal, (signal) => observe(input, makeCtx(signal))).then(
    (observed): Reading => seen(judge(clock, action, input, observed, ctx, target), onReading),
    (error: unknown): Reading =>
      seen({ kind: 'error', at: clock.now(), ...classifyReadError(error, ctx.signal) }, onReading),
  );
}

function seen(reading: Reading, onReading: ((reading: Reading) => void) | undefined): Reading {
  onReading?.(reading);
  return reading;
}

/**
 * A failed job's batch units as read back, when the action's expectation is a batch: a job that failed part way
 * may have applied some units, and the record says which. Null for a single record, or when the expectation
 * cannot judge a failed job's observation (it was written for finished work): the failure alone then decides.
 */
function unitsOf(
  action: AnyAction,
  input: unknown,
  observed: unknown,
  ctx: StepContext,
  target: string,
): Evaluation | null {
  try {
    const evaluation = evaluate(action, input, observed, ctx, { target });
    return evaluation.units ? evaluation : null;
  } catch {
    return null;
  }
}

/** What one observation says; nothing it holds or throws escapes as an exception. */
function judge(
  clock: Clock,
  action: AnyAction,
  input: unknown,
  observed: unknown,
  ctx: StepContext,
  target: string,
): Reading {
  const at = clock.now();
  if (observed === null || observed === undefined) return { kind: 'absent', at };
  try {
    // Refuse observations we could not record faithfully: evidence must be storable data.
    requirePlain(observed);
    const terminal = action.terminal ? action.terminal(observed) : undefined;
    if (action.terminal && !['running', 'succeeded', 'failed'].includes(terminal as string)) {
      return {
        kind: 'error',
        at,
        code: 'invalid_expectation',
        reason: `terminal() returned ${String(terminal)}`,
      };
    }
    if (action.mode === 'accepted' && terminal !== 'succeeded') {
      // Another target's job, running or failed, says nothing about ours: waiting on it would spend the poll
      // budget on a record that can never become ours, and its failure is not our operation's. No terminal
      // state goes with it, so nothing reads it as this operation's progress.
      const elsewhere = misdirected(action, input, observed, ctx, target);
      if (elsewhere) return { kind: 'observed', at, evaluation: elsewhere };
      // Another scope's failed job says nothing about this operation's: the read is wrong_scope, as for finished
      // work (without its terminal state, which would fail the operation as the provider's). Another scope's
      // running job is left to later reads, as any running read is.
      const wrong = terminal === 'failed' ? statedScopeMismatch(action, observed, ctx) : undefined;
      if (wrong) return { kind: 'observed', at, evaluation: wrong };
      // A failed state fails the operation, so it too must be shown to be this operation's: a lagging read of
      // an earlier failed job would otherwise fail work that is running or done, and invite doing it again.
      const fresh = terminal === 'failed' ? freshnessOf(action, input, observed, ctx) : undefined;
      if (fresh && !fresh.pass) {
        const evidence = { terminal, fresh: fresh.observed ?? fresh.pass };
        return { kind: 'observed', at, evaluation: { verdict: 'stale', checks: [fresh], evidence } };
      }
      if (terminal === 'failed')
        return { kind: 'observed', at, terminal, evaluation: unitsOf(action, input, observed, ctx, target) };
      return { kind: 'observed', at, ...(terminal ? { terminal } : {}), evaluation: null };
    }
    let evaluation = evaluate(action, input, observed, ctx, { target });
    // Finished work that is not provably this operation's (a lagging read of an earlier job) says nothing about
    // this one: it must not fail it either, or the work is done again; polling goes on within the budget.
    const unproven = evaluation.verdict === 'mismatch' || evaluation.verdict === 'partial';
    if (unproven && evaluation.fresh === false && action.mode === 'accepted') {
      evaluation = { ...evaluation, verdict: 'stale' };
    }
    return { kind: 'observed', at, ...(terminal ? { terminal } : {}), evaluation };
  } catch (error) {
    if (error instanceof UnusableValue) {
      return {
        kind: 'error',
        at,
        code: 'unusable_observation',
        reason: `observation unusable: ${error.message}`,
      };
    }
    const code = error instanceof InvalidExpectation ? 'invalid_expectation' : 'unusable_observation';
    return { kind: 'error', at, code, reason: `checking the observation failed: ${describeError(error)}` };
  }
}

/** Calls the optional baseline read with the same deadline and error rules as `observe`. */
export async function readBaseline(
  clock: Clock,
  action: AnyAction,
  input: unknown,
  makeCtx: StepContextFactory,
): Promise<{ ok: true; value: unknown } | { ok: false; code: ReadErrorCode; reason: string }> {
  const ctx = makeCtx();
  const before = action.before;
  if (!before) return { ok: true, value: undefined };
  try {
    const value = await withDeadline(clock, 'before', action.verifyTimeoutMs, ctx.signal, (signal) =>
      before(input, makeCtx(signal)),
    );
    if (value !== null && value !== undefined) requirePlain(value);
    return { ok: true, value: value ?? null };
  } catch (error) {
    if (error instanceof UnusableValue) {
      return { ok: false, code: 'unusable_observation', reason: `baseline unusable: ${error.message}` };
    }
    return { ok: false, ...classifyReadError(error, ctx.signal) };
  }
}

function classifyReadError(error: unknown, signal: AbortSignal): { code: ReadErrorCode; reason: string } {
  if (error instanceof StepTimeout) return { code: 'verifier_timeout', reason: error.message };
  if (signal.aborted) return { code: 'aborted', reason: 'the run was aborted during the read' };
  if (isDenial(error))
    return { code: 'verification_denied', reason: `verifier denied: ${describeError(error)}` };
  return { code: 'verifier_unavailable', reason: `verifier unavailable: ${describeError(error)}` };
}

/** A short, safe description of anything thrown. */
export function describeError(error: unknown): string {
  try {
    if (error instanceof Error) {
      const code = (error as { code?: unknown }).code;
      return typeof code === 'string' ? `${code}: ${error.message}` : error.message || error.name;
    }
    return String(error);
  } catch {
    return 'an unprintable error';
  }
}
