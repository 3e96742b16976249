import type { AnyAction, Completion } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import type { OperationStore } from '../store/types.js';
import { toCompletion } from './outcome.js';

/** A reviewer's decision on an operation parked as `awaiting_approval`. */
export interface ReviewDecision {
  /** Who decided; recorded on the event. */
  by: string;
  note?: string;
  /** The intent fingerprint the reviewer was shown (the pending completion's `evidence.fingerprint`). */
  fingerprint: string;
}

/**
 * Records an approval or rejection. It is bound to the fingerprint the reviewer saw, and an operation takes
 * one decision only; both are enforced by compare-and-set, so two reviewers racing cannot both decide.
 */
export async function recordDecision(
  store: OperationStore,
  action: (name: string) => AnyAction | undefined,
  operationId: string,
  verdict: 'approved' | 'rejected',
  decision: ReviewDecision,
  now: number,
): Promise<Completion> {
  if (typeof decision?.by !== 'string' || decision.by.trim() === '') {
    throw new ReadbackError('invalid_options', 'must name the reviewer', 'decision.by');
  }
  if (decision.note !== undefined && typeof decision.note !== 'string') {
    throw new ReadbackError('invalid_options', 'must be a string', 'decision.note');
  }
  if (typeof decision.fingerprint !== 'string' || decision.fingerprint === '') {
    throw new ReadbackError(
      'invalid_options',
      'must be the fingerprint the reviewer was shown',
      'decision.fingerprint',
    );
  }
  const record = await store.get(operationId);
  if (!record)
    throw new ReadbackError('unknown_operation', `no operation has id "${operationId}"`, 'operationId');
  const act = action(record.action);
  if (!act)
    throw new ReadbackError('unknown_action', `no registered action is named "${record.action}"`, 'action');
  if (record.lifecycle !== 'awaiting_approval') {
    throw new ReadbackError(
      'not_awaiting_approval',
      `operation ${operationId} is ${record.lifecycle}, not awaiting approval: a decision was already recorded or none is needed`,
      'operationId',
    );
  }
  if (decision.fingerprint !== record.fingerprint) {
    throw new ReadbackError(
      'approval_mismatch',
      `the decision was made for intent ${decision.fingerprint}, but operation ${operationId} is intent ${record.fingerprint}`,
      'decision.fingerprint',
    );
  }
  const note = decision.note ?? null;
  const base = {
    target: record.target,
    operationId: record.id,
    idempotencyKey: record.idempotencyKey,
    attempt: record.attempt,
    nothingExecuted: true,
  };
  const completion =
    verdict === 'approved'
      ? toCompletion(
          {
            ...base,
            status: 'pending',
            errorCode: 'in_progress',
            reason: `approved by ${decision.by}; it runs on the next run or poll`,
            next: 'poll',
          },
          act,
        )
      : toCompletion(
          {
            ...base,
            status: 'failed',
            errorCode: 'rejected_by_reviewer',
            reason: `rejected by ${decision.by}${note ? `: ${note}` : ''}`,
            next: 'ask_user',
          },
          act,
        );
  const updated = await store.transition(
    operationId,
    ['awaiting_approval'],
    verdict === 'approved'
      ? { lifecycle: 'requested', status: 'pending', completion, nextPollAt: null, updatedAt: now }
      : { lifecycle: 'settled', status: 'failed', completion, nextPollAt: null, updatedAt: now },
    {
      type: verdict,
      at: now,
      from: 'awaiting_approval',
      to: verdict === 'approved' ? 'requested' : 'settled',
      status: completion.status,
      actor: decision.by,
      attempt: record.attempt,
      detail: { by: decision.by, note, fingerprint: decision.fingerprint },
    },
  );
  if (!updated) {
    throw new ReadbackError(
      'not_awaiting_approval',
      `operation ${operationId} was decided by someone else first`,
      'operationId',
    );
  }
  return completion;
}
