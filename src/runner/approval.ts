import type { Clock } from '../clock.js';
import type { AnyAction, Completion } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { storableText } from '../store/records.js';
import type { OperationStore } from '../store/types.js';
import { toCompletion } from './outcome.js';
import { type Tracer, traced } from './tracer.js';

/** A reviewer's decision on an operation parked as `awaiting_approval`. */
export interface ReviewDecision {
  /** Who decided; recorded on the event. */
  by: string;
  note?: string;
  /** The intent fingerprint the reviewer was shown (the pending completion's `evidence.fingerprint`). */
  fingerprint: string;
}

// C0/C1 control characters, DEL and the Unicode line separators: a name spelt with them prints as a
// different name (or a forged line) wherever the decision is shown.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

// The bidirectional marks, embeddings, overrides and isolates: a name holding one shows its letters in another
// order than they are stored ("Trojan Source"), so the name seen is not the name recorded.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

// What shows nothing: whitespace, controls, format characters (zero-width space and joiners, bidi marks, the
// BOM, the soft hyphen), variation selectors, the combining grapheme joiner, and blank letters (Hangul fillers).
const INVISIBLE =
  /^(?:[\s\p{Cc}\p{Cf}\u115f\u1160\u2800\u3164\uffa0]|\p{Variation_Selector}|\u034f|\u17b4|\u17b5)*$/u;

/** True when the text shows something: not empty, and not only whitespace or invisible characters. */
export function hasVisibleText(text: string): boolean {
  return !INVISIBLE.test(text);
}

/**
 * What is wrong with decision text, or undefined: NUL (Postgres jsonb refuses it) and lone surrogates (not
 * UTF-8) cannot be stored exactly by every store, and a name (`oneLine`) must show something and must not
 * hold control characters or bidirectional controls.
 */
export function decisionTextProblem(text: string, oneLine: boolean): string | undefined {
  if (oneLine && CONTROL.test(text)) return 'must not contain control characters or line breaks';
  if (oneLine && BIDI.test(text)) return 'must not contain bidirectional control characters';
  if (oneLine && !hasVisibleText(text))
    return 'must hold visible text, not only spaces or invisible characters';
  if (storableText(text, true)) return undefined;
  return text.includes('\u0000')
    ? 'must not contain a NUL character'
    : 'must be well-formed Unicode (it has a lone surrogate)';
}

function checkText(text: string, field: string, oneLine: boolean): void {
  const problem = decisionTextProblem(text, oneLine);
  if (problem) throw new ReadbackError('invalid_options', problem, field);
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
  checkText(decision.by, 'decision.by', true);
  if (decision.note !== undefined) checkText(decision.note, 'decision.note', false);
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

/** What a runner lends `reviewOperation`: its store, clock, registered actions and tracer. */
export interface ReviewDeps {
  store: OperationStore;
  clock: Clock;
  actionNamed: (name: string) => AnyAction | undefined;
  tracer: Tracer | undefined;
}

/**
 * `runner.approve` / `runner.reject`. A reviewer's decision is part of the run record: traced as a `review`
 * call whose permission event names the decision, then its state transition and the completion it formed.
 */
export async function reviewOperation(
  deps: ReviewDeps,
  operationId: string,
  verdict: 'approved' | 'rejected',
  decision: ReviewDecision,
): Promise<Completion> {
  // The decision's time, which its store event carries and so does its trace transition.
  let decidedAt = 0;
  const decide = () => {
    decidedAt = deps.clock.now();
    return recordDecision(deps.store, deps.actionNamed, operationId, verdict, decision, decidedAt);
  };
  const record = deps.tracer ? await deps.store.get(operationId) : null;
  const known = record ? deps.actionNamed(record.action) : undefined;
  if (!deps.tracer || !record || !known || record.lifecycle !== 'awaiting_approval') return decide();
  const by = typeof decision?.by === 'string' ? decision.by : undefined;
  const t = deps.tracer.begin(
    known,
    { runId: record.runId, entry: 'review', scope: record.scope, ...(by ? { actor: by } : {}) },
    record,
  );
  const done = decide().then((completion) => {
    const note = typeof decision.note === 'string' && decision.note !== '' ? `: ${decision.note}` : '';
    t.permission(true, verdict === 'rejected' ? `rejected by ${by}${note}` : undefined);
    const lifecycle = verdict === 'approved' ? 'requested' : 'settled';
    t.transition(
      verdict,
      'awaiting_approval',
      {
        ...record,
        lifecycle,
        status: verdict === 'approved' ? record.status : completion.status,
      },
      decidedAt,
    );
    return completion;
  });
  return traced(t, done);
}
