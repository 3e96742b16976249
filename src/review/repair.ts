/**
 * The failure classes of an incident review, and for each the first repair and the recovery path.
 * The repair fixes the code path that let the word through; the recovery path says what to do about
 * the operation that is already out there: poll it, retry it (only when repeating is known to be safe),
 * or hand it to a human to reconcile.
 */
import type { RepeatSafety, Status } from '../contract/types.js';
import type { Evidence } from './ladder.js';

/** The seven ways a claim outruns its evidence. */
export type FailureClass =
  | 'no_tool_call'
  | 'wrong_arguments'
  | 'transport_error'
  | 'accepted_unfinished'
  | 'readback_mismatch'
  | 'readback_unavailable'
  | 'wrong_text';

/** Every class, in the order the issue lists them. */
export const FAILURE_CLASSES: readonly FailureClass[] = [
  'no_tool_call',
  'wrong_arguments',
  'transport_error',
  'accepted_unfinished',
  'readback_mismatch',
  'readback_unavailable',
  'wrong_text',
];

/** Human names of the classes. */
export const CLASS_LABELS: Record<FailureClass, string> = {
  no_tool_call: 'no tool call',
  wrong_arguments: 'wrong arguments',
  transport_error: 'transport error',
  accepted_unfinished: 'accepted but unfinished',
  readback_mismatch: 'readback mismatch',
  readback_unavailable: 'readback unavailable',
  wrong_text: 'correct status, wrong text',
};

const REPAIRS: Record<FailureClass, string> = {
  no_tool_call:
    'route the effect through a readback-wrapped tool and run guardAnswer on the final answer, so a claim with no completion behind it is refused',
  wrong_arguments:
    "check the call's arguments against the request before executing: the action's input schema and target() must name exactly what the user asked for",
  transport_error:
    'treat a throw or timeout as unknown, never as failed or done: read back before retrying, and declare maxInFlightMs so absence is only believed after the settlement window',
  accepted_unfinished:
    'declare the action mode \'accepted\' with a poll budget and a terminal() rule; until a read shows the end state, say "queued, not done"',
  readback_mismatch:
    "check the verifier's target and scope fields: it must read the record this call changed (the primary, the same tenant, this operation's key), and a mismatch must surface as failed",
  readback_unavailable:
    'give the action an authoritative read (observe) and keep the operation id: while the read is unavailable the only honest status is unknown',
  wrong_text:
    'bind messages to status: form the text from the completion (formMessage templates) and run guardAnswer before it reaches the user',
};

/** What to do about the operation itself. */
export type RecoveryPath = 'none' | 'poll' | 'retry' | 'human_reconcile';

/** The recovery path, whether a retry is safe, and the concrete next step. */
export interface Recovery {
  path: RecoveryPath;
  safeToRetry: RepeatSafety;
  step: string;
}

/** The first repair for a class: the one change that would have kept the word honest. */
export function firstRepair(cls: FailureClass): string {
  return REPAIRS[cls];
}

function reconcile(operationId: string | undefined, why: string): string {
  const id = operationId ?? '<operation id>';
  return `${why}; a human checks the target and records the decision with 'readback ops resolve ${id} --status verified|failed --note "..." --by NAME'`;
}

/**
 * The recovery path from the evidence: open work is polled, unsafe or contradicted work goes to a human,
 * and a retry is offered only when nothing ran or repeating is known to be safe.
 */
export function recoveryFor(
  cls: FailureClass,
  evidence: Evidence | undefined,
  safeToRepeat: RepeatSafety | undefined,
  operationId: string | undefined,
): Recovery {
  const safe: RepeatSafety = safeToRepeat ?? 'unknown';
  if (cls === 'no_tool_call' || evidence === undefined) {
    return {
      path: 'retry',
      safeToRetry: true,
      step: 'nothing was executed: run the request through its tool, then report the status it returns',
    };
  }
  const status: Status = evidence.status;
  const poll = `poll: read the target again ('readback ops show ${operationId ?? '<operation id>'}', or let 'readback reconcile' drive it) until it settles`;
  if (cls === 'transport_error') {
    if (status === 'verified' || status === 'no_op') {
      return {
        path: 'none',
        safeToRetry: false,
        step: 'the read-back shows the effect landed: do not retry; correct what was reported',
      };
    }
    if (safe === true) {
      return {
        path: 'retry',
        safeToRetry: true,
        step: 'read back first; retry only once the settlement window has passed and the effect is proven absent (the action is safe to repeat)',
      };
    }
    return {
      path: 'human_reconcile',
      safeToRetry: safe,
      step: reconcile(
        operationId,
        `retrying is ${safe === false ? 'not safe' : 'not known to be safe'} and the request may have landed`,
      ),
    };
  }
  if (cls === 'wrong_arguments') {
    return {
      path: 'human_reconcile',
      safeToRetry: status === 'failed' ? safe : false,
      step: reconcile(
        operationId,
        'the call acted on something other than what was asked, so the wrong target may have changed',
      ),
    };
  }
  switch (status) {
    case 'verified':
    case 'no_op':
      return {
        path: 'none',
        safeToRetry: false,
        step: 'the effect holds: correct the message, do not repeat the call',
      };
    case 'pending':
      return { path: 'poll', safeToRetry: safe, step: poll };
    case 'unknown':
      if (evidence.kind === 'unread' || evidence.code === 'unverifiable') {
        return {
          path: 'human_reconcile',
          safeToRetry: safe,
          step: reconcile(operationId, 'no read-back exists for this call'),
        };
      }
      return { path: 'poll', safeToRetry: safe, step: poll };
    case 'partial':
      return {
        path: 'human_reconcile',
        safeToRetry: safe,
        step: reconcile(operationId, 'some units did not land'),
      };
    case 'failed':
      return {
        path: 'human_reconcile',
        safeToRetry: safe,
        step: reconcile(operationId, `the read-back contradicts the claim (${evidence.code})`),
      };
  }
}
