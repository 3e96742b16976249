// What the baseline read (the action's `before`) decides before anything is executed: nothing (go on and
// execute), or an outcome that ends the call with nothing run. Pure: the drive records what it returns.
import { evaluate } from '../contract/evaluate.js';
import type { AnyAction, StepContext } from '../contract/types.js';
import type { OperationRecord } from '../store/types.js';
import type { Outcome } from './outcome.js';
import { describeError } from './readback.js';

type Decided = Partial<Outcome> & Pick<Outcome, 'status'>;

/**
 * An outcome the baseline decides, with nothing executed, or undefined to go on and execute. `settle` says
 * whether it ends the operation (the same call would meet the same answer) or leaves the record requested,
 * so the same call may be made again once what stood in its way is gone.
 */
export type BaselineDecision = { settle: boolean; outcome: Decided };

/** Judges a baseline observation (`observed`, not null) of the operation's target, read at `now`. */
export function judgeBaseline(
  action: AnyAction,
  record: Pick<OperationRecord, 'input' | 'target'>,
  observed: unknown,
  ctx: StepContext,
  now: number,
): BaselineDecision | undefined {
  const { input, target } = record;
  let evaluation: ReturnType<typeof evaluate>;
  try {
    evaluation = evaluate(action, input, observed, ctx, { baseline: true, target });
  } catch (error) {
    return stay({
      status: 'failed',
      errorCode: 'invalid_expectation',
      reason: `checking the baseline failed: ${describeError(error)}`,
    });
  }
  const seen = { checks: evaluation.checks, evidence: evaluation.evidence, observedAt: now };
  if (evaluation.verdict === 'wrong_target') {
    // The baseline read another record: whether ours already holds is unknown, so nothing runs; the same
    // call would read the same wrong record, so it is refused (next: ask_user) rather than offered again.
    return settle({
      ...seen,
      status: 'failed',
      errorCode: 'wrong_target',
      reason: `the baseline read returned the record of ${JSON.stringify(evaluation.evidence.target)}, not of ${JSON.stringify(target)}; nothing was executed`,
    });
  }
  if (evaluation.verdict === 'wrong_scope') {
    return settle({
      ...seen,
      status: 'failed',
      errorCode: 'wrong_scope',
      reason: 'the target belongs to another scope; nothing was executed',
    });
  }
  let acceptable = false;
  if (evaluation.verdict !== 'pass' && action.acceptable) {
    // Only `true` makes the call a no_op: a truthy promise (an async hook) would skip the work every time. A
    // hook that throws decides nothing, so nothing runs, as when the baseline cannot be checked.
    try {
      acceptable = action.acceptable(input, observed) === true;
    } catch (error) {
      return stay({
        status: 'failed',
        errorCode: 'invalid_expectation',
        reason: `acceptable() failed on the baseline: ${describeError(error)}`,
      });
    }
  }
  if (evaluation.verdict === 'pass' || acceptable) {
    return settle({ ...seen, status: 'no_op', reason: 'the target already satisfied the request' });
  }
  if (evaluation.running) {
    // Not done (that job may still fail) and not safe to start beside it: nothing runs, and the same call
    // may be made again once that job has ended, when the baseline tells which way it went.
    return stay({
      ...seen,
      status: 'failed',
      errorCode: 'target_busy',
      reason: 'a job on this target is still running; nothing was executed',
    });
  }
  return undefined;
}

const settle = (outcome: Decided): BaselineDecision => ({ settle: true, outcome });
const stay = (outcome: Decided): BaselineDecision => ({ settle: false, outcome });
