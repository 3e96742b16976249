/**
 * The word-strength ladder: how much a word claims, and how much a piece of evidence allows.
 * Claims rise from `accepted` (it entered someone's queue) through `running` to `done` (the effect
 * holds); `failed` is a definite negative, which a still-open outcome does not allow either (a timed-out
 * write reported as "failed" invites a duplicate retry). Sentences are judged with the final-answer
 * guard's own claim finder, so there is one vocabulary of completion words in readback, not two.
 */
import type { Status } from '../contract/types.js';
import { findClaims, splitSentences } from '../messages/words.js';
import type { IncidentCall, IncidentReadback, IncidentResult, Location } from './model.js';

/** How strong a claim is. `none` claims nothing (an honest "unknown" or no claim at all). */
export type ClaimLevel = 'none' | 'accepted' | 'running' | 'done' | 'failed';

const RANK: Record<ClaimLevel, number> = { none: 0, accepted: 1, running: 2, done: 3, failed: 0 };

// Status words that adapters and UIs use as one-word outcomes. These are states, not effect verbs,
// so they are not in the guard's vocabulary; anything longer than a word goes through the guard.
const STATUS_WORDS: Record<string, ClaimLevel> = {
  ok: 'done',
  success: 'done',
  succeeded: 'done',
  successful: 'done',
  done: 'done',
  complete: 'done',
  completed: 'done',
  verified: 'done',
  true: 'done',
  running: 'running',
  in_progress: 'running',
  processing: 'running',
  started: 'running',
  accepted: 'accepted',
  queued: 'accepted',
  pending: 'accepted',
  submitted: 'accepted',
  enqueued: 'accepted',
  scheduled: 'accepted',
  received: 'accepted',
  failed: 'failed',
  failure: 'failed',
  error: 'failed',
  rejected: 'failed',
  false: 'failed',
  unknown: 'none',
  unverified: 'none',
  partial: 'none',
  no_op: 'none',
};

/** The strength of a claimed outcome: a status word ("success", "queued") or a sentence judged by the guard. */
export function claimLevel(claimed: string | undefined): ClaimLevel {
  if (claimed === undefined) return 'none';
  const word = claimed
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_')
    .replace(/[^a-z_]/g, '');
  const known = STATUS_WORDS[word];
  if (known !== undefined) return known;
  if (splitSentences(claimed).some((s) => findClaims(s).length > 0)) return 'done';
  // A sentence with no effect claim may still carry a weaker status word ("the email is queued").
  let best: ClaimLevel = 'none';
  for (const token of claimed.toLowerCase().split(/[^a-z_]+/)) {
    const level = STATUS_WORDS[token];
    if (level !== undefined && level !== 'failed' && RANK[level] > RANK[best]) best = level;
  }
  return best;
}

/** What kind of fact the evidence for a call is; the failure class follows from it. */
export type EvidenceKind =
  | 'verified'
  | 'no_op'
  | 'partial'
  | 'accepted'
  | 'transport'
  | 'mismatch'
  | 'rejected'
  | 'invalid_args'
  | 'unavailable'
  | 'unread';

/** The best evidence for one call: its read-back when there is one, else what its raw result can prove. */
export interface Evidence {
  status: Status;
  kind: EvidenceKind;
  /** The machine code behind it (`in_progress`, `readback_mismatch`, `http_202`, `no_readback`). */
  code: string;
  /** One line for the report. */
  summary: string;
  source: 'readback' | 'raw';
  at: Location;
}

const TRANSPORT_CODES = new Set([
  'transport_error',
  'in_flight',
  'effect_absent',
  'execute_failed',
  'aborted',
]);
const MISMATCH_CODES = new Set([
  'readback_mismatch',
  'wrong_scope',
  'wrong_target',
  'stale_read',
  'provider_failed',
]);
// A read of another record (or tenant) is unknown for this call, but the verifier read the wrong thing: a mismatch
// of target, whose repair is the verifier's target and scope fields, not a missing read.
const MISREAD_CODES = new Set(['wrong_target', 'wrong_scope']);
const ARG_CODES = new Set([
  'invalid_input',
  'invalid_target',
  'invalid_argument',
  'validation_error',
  'bad_request',
]);

function readbackKind(rb: IncidentReadback): EvidenceKind {
  const code = rb.errorCode ?? '';
  switch (rb.status) {
    case 'verified':
      return 'verified';
    case 'no_op':
      return 'no_op';
    case 'partial':
      return 'partial';
    case 'pending':
      return 'accepted';
    case 'unknown':
      if (MISREAD_CODES.has(code)) return 'mismatch';
      return TRANSPORT_CODES.has(code) ? 'transport' : 'unavailable';
    case 'failed':
      if (TRANSPORT_CODES.has(code)) return 'transport';
      if (ARG_CODES.has(code)) return 'invalid_args';
      if (MISMATCH_CODES.has(code) || rb.checks.some((c) => !c.pass)) return 'mismatch';
      return 'rejected';
  }
}

function field(raw: unknown, ...names: string[]): unknown {
  if (typeof raw !== 'object' || raw === null) return undefined;
  for (const name of names) {
    const value = (raw as Record<string, unknown>)[name];
    if (value !== undefined) return value;
  }
  return undefined;
}

type RawReading = Pick<Evidence, 'status' | 'kind' | 'code' | 'summary'>;

/** What a raw tool result proves by itself: at most that a request was accepted; a 200 is not a read-back. */
export function rawEvidence(result: IncidentResult | undefined): RawReading {
  if (result === undefined) {
    return { status: 'unknown', kind: 'transport', code: 'no_result', summary: 'the call has no result' };
  }
  if (result.error !== undefined) {
    return {
      status: 'unknown',
      kind: 'transport',
      code: 'transport_error',
      summary: `the call raised ${JSON.stringify(result.error)}: it may or may not have landed`,
    };
  }
  const http = field(result.raw, 'status', 'statusCode', 'httpStatus', 'code');
  if (typeof http === 'number' && http >= 100 && http < 600) {
    if (http === 202)
      return {
        status: 'pending',
        kind: 'accepted',
        code: 'http_202',
        summary: 'HTTP 202: accepted, not done',
      };
    if ([408, 502, 503, 504].includes(http) || http >= 500) {
      return {
        status: 'unknown',
        kind: 'transport',
        code: `http_${http}`,
        summary: `HTTP ${http}: it may or may not have landed`,
      };
    }
    if (http === 400 || http === 422) {
      return {
        status: 'failed',
        kind: 'invalid_args',
        code: `http_${http}`,
        summary: `HTTP ${http}: the arguments were refused`,
      };
    }
    if (http >= 400)
      return { status: 'failed', kind: 'rejected', code: `http_${http}`, summary: `HTTP ${http}: refused` };
  }
  const state = field(result.raw, 'status', 'state');
  if (typeof state === 'string') {
    const level = claimLevel(state);
    if (level === 'accepted' || level === 'running') {
      return {
        status: 'pending',
        kind: 'accepted',
        code: state,
        summary: `the result says "${state}": accepted, not done`,
      };
    }
    if (level === 'failed')
      return { status: 'failed', kind: 'rejected', code: state, summary: `the result says "${state}"` };
  }
  if (field(result.raw, 'ok') === false || field(result.raw, 'error') !== undefined) {
    return {
      status: 'failed',
      kind: 'rejected',
      code: 'error_body',
      summary: 'the result body reports an error',
    };
  }
  return {
    status: 'unknown',
    kind: 'unread',
    code: 'no_readback',
    summary: 'the tool returned, but nothing read back the state it was meant to change',
  };
}

/** The evidence a review judges a call's claims against: its read-back wherever it appears, else the raw result. */
export function evidenceFor(call: IncidentCall): Evidence {
  const rb = call.readback;
  if (rb !== undefined) {
    const code = rb.errorCode ?? rb.status;
    const why = rb.reason ? `: ${rb.reason}` : '';
    const kind = readbackKind(rb);
    return {
      status: rb.status,
      kind,
      code,
      // Refused arguments were never read back: nothing ran, so there was nothing to read.
      summary:
        kind === 'invalid_args'
          ? `readback refused the arguments, nothing ran (${rb.status}, ${code})${why}`
          : `read back ${rb.status} (${code})${why}`,
      source: 'readback',
      at: rb.at,
    };
  }
  return { ...rawEvidence(call.result), source: 'raw', at: call.result?.at ?? call.at };
}

/** True when the evidence allows a claim of that strength. */
export function supports(evidence: Evidence, level: ClaimLevel): boolean {
  switch (level) {
    case 'none':
      return true;
    case 'done':
      return evidence.status === 'verified' || evidence.status === 'no_op';
    case 'running':
      return ['verified', 'no_op', 'partial', 'pending'].includes(evidence.status);
    case 'accepted':
      return evidence.status !== 'failed';
    case 'failed':
      return evidence.status === 'failed' || evidence.status === 'partial';
  }
}
