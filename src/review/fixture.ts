/**
 * Regression fixtures: the smallest reproduction of a reviewed incident (request, the normalized tool
 * result, the verifier's result, the status it should have had and the kind of message that status
 * allows), written as JSON so a test can load it, review it again and expect the same class.
 */
import { type Check, STATUSES, type Status } from '../contract/types.js';
import type { ReviewResult, Where } from './analyze.js';
import type { InputIssue, ReadOutcome } from './issues.js';
import { deriveTarget, describeLocation, type Incident, type IncidentCall } from './model.js';
import { FAILURE_CLASSES, type FailureClass } from './repair.js';

/** The fixture format version, written into every fixture. */
export const FIXTURE_VERSION = 1;

/** The kind of message a status allows the agent to send. */
export type MessageClass =
  | 'effect_holds'
  | 'already_so'
  | 'queued_not_done'
  | 'outcome_unknown'
  | 'failed_with_reason'
  | 'counts_only'
  | 'no_effect';

/** The message class each status allows; `no_effect` when no call ran at all. */
export const MESSAGE_CLASS: Record<Status, MessageClass> = {
  verified: 'effect_holds',
  no_op: 'already_so',
  pending: 'queued_not_done',
  unknown: 'outcome_unknown',
  failed: 'failed_with_reason',
  partial: 'counts_only',
};

/** A regression fixture, as written by `readback review --fixture-out`. */
export interface ReviewFixture {
  readbackReviewFixture: number;
  source: string;
  request: string | null;
  call: {
    name: string;
    args: Record<string, unknown>;
    target: string;
    safeToRepeat?: boolean | 'unknown';
  } | null;
  /** The tool result as the review normalized it. */
  toolResult: { raw: unknown; error?: string; claimed?: string } | null;
  /** The authoritative read, when there was one. */
  verifier: {
    status: Status;
    operationId?: string;
    errorCode?: string;
    reason?: string;
    checks: Check[];
    message?: string;
  } | null;
  finalAnswer: string | null;
  /** The honest status of the call: what the evidence allowed. */
  expectedStatus: Status | null;
  allowedMessageClass: MessageClass;
  /** What the review found when the fixture was written. */
  expected: { class: FailureClass | null; where: Where | null; location: string | null };
}

/** Builds the fixture of a review: the call at the first unsupported transition (or the first call when clean). */
export function buildFixture(incident: Incident, result: ReviewResult): ReviewFixture {
  const first = result.first;
  const call: IncidentCall | undefined =
    first === undefined ? incident.calls[0] : incident.calls.find((c) => c.id === first.callId);
  const status = first?.evidence?.status ?? (call ? (call.readback?.status ?? null) : null);
  const rb = call?.readback;
  return {
    readbackReviewFixture: FIXTURE_VERSION,
    source: incident.source,
    request: incident.request?.text ?? null,
    call: call
      ? {
          name: call.name,
          args: call.args,
          target: call.target,
          ...(call.safeToRepeat !== undefined ? { safeToRepeat: call.safeToRepeat } : {}),
        }
      : null,
    toolResult: call?.result
      ? {
          raw: call.result.raw,
          ...(call.result.error !== undefined ? { error: call.result.error } : {}),
          ...(call.result.claimed !== undefined ? { claimed: call.result.claimed } : {}),
        }
      : null,
    verifier: rb
      ? {
          status: rb.status,
          checks: rb.checks,
          ...(rb.operationId !== undefined ? { operationId: rb.operationId } : {}),
          ...(rb.errorCode !== undefined ? { errorCode: rb.errorCode } : {}),
          ...(rb.reason !== undefined ? { reason: rb.reason } : {}),
          ...(rb.message !== undefined ? { message: rb.message } : {}),
        }
      : null,
    // The fixture keeps one call; answer sentences about the run's other calls would be claims with no call
    // behind them when it is reviewed again, so an answer finding keeps only the sentence that made it.
    finalAnswer: first?.where === 'final_answer' ? first.claim : (incident.answer?.text ?? null),
    expectedStatus: status,
    allowedMessageClass: status === null ? 'no_effect' : MESSAGE_CLASS[status],
    expected: {
      class: first?.class ?? null,
      where: first?.where ?? null,
      location: first ? describeLocation(first.at) : null,
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks a parsed JSON value is a fixture this version can read; every problem names its field. */
export function readFixture(value: unknown): ReadOutcome<ReviewFixture> {
  const issues: InputIssue[] = [];
  const fail = (field: string, message: string) => issues.push({ field, message });
  if (!isRecord(value)) return { ok: false, issues: [{ message: 'a fixture must be a JSON object' }] };
  if (value.readbackReviewFixture !== FIXTURE_VERSION) {
    fail(
      'readbackReviewFixture',
      `must be ${FIXTURE_VERSION}, got ${JSON.stringify(value.readbackReviewFixture)}`,
    );
  }
  for (const key of ['request', 'finalAnswer'] as const) {
    if (value[key] !== null && typeof value[key] !== 'string') fail(key, 'must be a string or null');
  }
  const call = value.call;
  if (call !== null && !(isRecord(call) && typeof call.name === 'string' && isRecord(call.args))) {
    fail('call', 'must be null or an object with a string "name" and an object "args"');
  }
  if (value.toolResult !== null && !isRecord(value.toolResult))
    fail('toolResult', 'must be an object or null');
  const verifier = value.verifier;
  if (verifier !== null) {
    if (!isRecord(verifier) || !(STATUSES as readonly unknown[]).includes(verifier.status)) {
      fail('verifier.status', `must be one of ${STATUSES.join(', ')}`);
    } else if (!Array.isArray(verifier.checks)) fail('verifier.checks', 'must be an array');
  }
  if (value.expectedStatus !== null && !(STATUSES as readonly unknown[]).includes(value.expectedStatus)) {
    fail('expectedStatus', `must be null or one of ${STATUSES.join(', ')}`);
  }
  const expected = value.expected;
  if (
    !isRecord(expected) ||
    (expected.class !== null && !(FAILURE_CLASSES as readonly unknown[]).includes(expected.class))
  ) {
    fail('expected.class', `must be null or one of ${FAILURE_CLASSES.join(', ')}`);
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: value as unknown as ReviewFixture };
}

/** Turns a fixture back into an incident, so it can be reviewed again. */
export function incidentFromFixture(fixture: ReviewFixture, source: string): Incident {
  const incident: Incident = { source, format: 'fixture', calls: [] };
  if (fixture.request !== null)
    incident.request = { text: fixture.request, at: { order: 0, part: 'fixture request' } };
  if (fixture.call !== null) {
    const c = fixture.call;
    const call: IncidentCall = {
      id: fixture.verifier?.operationId ?? 'fixture-call',
      name: c.name,
      args: c.args,
      target: typeof c.target === 'string' ? c.target : deriveTarget(c.name, c.args),
      ...(c.safeToRepeat !== undefined ? { safeToRepeat: c.safeToRepeat } : {}),
      at: { order: 1, part: 'fixture call' },
    };
    if (fixture.toolResult !== null)
      call.result = { ...fixture.toolResult, at: { order: 2, part: 'fixture toolResult' } };
    if (fixture.verifier !== null)
      call.readback = { ...fixture.verifier, at: { order: 3, part: 'fixture verifier' } };
    incident.calls.push(call);
  }
  if (fixture.finalAnswer !== null)
    incident.answer = { text: fixture.finalAnswer, at: { order: 4, part: 'fixture finalAnswer' } };
  return incident;
}
