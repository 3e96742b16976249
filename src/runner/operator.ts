import type { Completion, CompletionDraft } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { formMessage } from '../messages/templates.js';
import type { OperationStore } from '../store/types.js';
import { decisionTextProblem, hasVisibleText } from './approval.js';
import { asShadow } from './shadow.js';

/** An operator's decision on an open operation, made outside any agent run. */
export interface OperatorResolution {
  status: 'verified' | 'failed';
  note: string;
  by: string;
}

/**
 * Settles an open operation by an operator's decision, recorded as such: the completion says who decided and
 * why, the event log keeps every earlier observation, and an already settled operation is refused.
 */
export async function resolveByOperator(
  store: OperationStore,
  operationId: string,
  resolution: OperatorResolution,
  now: number,
): Promise<Completion> {
  if (resolution?.status !== 'verified' && resolution?.status !== 'failed') {
    throw new ReadbackError('invalid_options', 'must be "verified" or "failed"', 'status');
  }
  for (const field of ['note', 'by'] as const) {
    // Zero-width or other invisible characters alone would record a decision that shows no one and no reason.
    if (typeof resolution[field] !== 'string' || !hasVisibleText(resolution[field])) {
      throw new ReadbackError(
        'invalid_options',
        'is required: an operator decision must say who and why',
        field,
      );
    }
    const problem = decisionTextProblem(resolution[field], field === 'by');
    if (problem) throw new ReadbackError('invalid_options', problem, field);
  }
  const record = await store.get(operationId);
  if (!record)
    throw new ReadbackError('unknown_operation', `no operation has id "${operationId}"`, 'operationId');
  if (record.lifecycle === 'settled') {
    throw new ReadbackError(
      'already_settled',
      `operation ${operationId} already settled as ${record.status}; an operator cannot overwrite it`,
      'operationId',
    );
  }
  const previous = record.completion;
  const draft: CompletionDraft = {
    status: resolution.status,
    action: record.action,
    target: record.target,
    operationId: record.id,
    idempotencyKey: record.idempotencyKey,
    attempt: record.attempt,
    postcondition: previous?.postcondition ?? '(recorded by an operator)',
    mode: previous?.mode ?? 'committed',
    ...(previous?.evidence ? { evidence: previous.evidence } : {}),
    checks: previous?.checks ?? [],
    errorCode: 'operator_resolved',
    reason: `resolved as ${resolution.status} by ${resolution.by}: ${resolution.note}`,
    nextAllowedAction: resolution.status === 'verified' ? 'none' : 'ask_user',
    safeToRepeat: previous?.safeToRepeat ?? 'unknown',
  };
  const formed: Completion = { ...draft, message: formMessage(draft).message };
  // A shadow operation stays a shadow observation: the live tool's claim is judged against the operator's
  // decision, so `ops list --shadow` still shows the disagreement, and the message is never proof for users.
  const completion = previous?.shadow ? asShadow(formed, previous.shadow.claimed) : formed;
  // A compare-and-set on what the decision was made from: a record that moved on meanwhile (a run executed it, a
  // read settled or parked it) is not settled on the strength of a view that no longer holds.
  const updated = await store.transition(
    operationId,
    [record.lifecycle],
    {
      lifecycle: 'settled',
      status: resolution.status,
      completion,
      nextPollAt: null,
      leaseOwner: null,
      leaseToken: null,
      leaseExpiresAt: null,
      updatedAt: now,
    },
    {
      type: 'operator_resolved',
      at: now,
      from: record.lifecycle,
      to: 'settled',
      status: resolution.status,
      actor: resolution.by,
      attempt: record.attempt,
      detail: { by: resolution.by, note: resolution.note, previousStatus: record.status },
    },
    { attempt: record.attempt },
  );
  if (!updated) {
    const now = await store.get(operationId);
    if (now?.lifecycle === 'settled') {
      throw new ReadbackError(
        'already_settled',
        `operation ${operationId} settled as ${now.status} while it was being resolved`,
        'operationId',
      );
    }
    const where = now ? `${now.lifecycle}, attempt ${now.attempt}` : 'gone';
    throw new ReadbackError(
      'store_conflict',
      `operation ${operationId} moved on while it was being resolved (it was ${record.lifecycle}, attempt ${record.attempt}; now ${where}); look at it again before deciding`,
      'operationId',
    );
  }
  return completion;
}
