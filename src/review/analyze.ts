/**
 * The review itself: walk the incident in chain order (request → call → result → read-back → answer)
 * and, at every place a word about an effect was used, compare its strength with the evidence for it.
 * The first place a stronger word was used than the evidence allowed is the incident's first
 * unsupported transition; its class, first repair and recovery path follow from that evidence.
 */
import type { Completion } from '../contract/types.js';
import { guardAnswer, type Violation } from '../messages/guard.js';
import { claimsCompletion } from '../messages/words.js';
import { claimsAboutOtherTargets, unsupportedFailures } from './answer-checks.js';
import { idsInText, idsOfCall, sameShape, sameValue } from './identifiers.js';
import { type ClaimLevel, claimLevel, type Evidence, evidenceFor, rawEvidence, supports } from './ladder.js';
import type { Incident, IncidentCall, Location } from './model.js';
import { type FailureClass, firstRepair, type Recovery, recoveryFor } from './repair.js';

/** Which link of the chain used the unsupported word. */
export type Where = 'tool_call' | 'tool_result' | 'readback_message' | 'final_answer';

/** One place where a claim outran its evidence. */
export interface Finding {
  where: Where;
  at: Location;
  class: FailureClass;
  /** The sentence, status word or call that made the claim. */
  claim: string;
  /** The effect word in it that claims too much ("sent", "done"), when the claim is a sentence. */
  word?: string;
  claimLevel: ClaimLevel;
  callId?: string;
  action?: string;
  target?: string;
  operationId?: string;
  evidence?: Evidence;
  /** One sentence: what was claimed and what the evidence allowed. */
  detail: string;
}

/** The first finding with what to do about it. */
export interface FirstFinding extends Finding {
  repair: string;
  recovery: Recovery;
}

/** The outcome of reviewing one incident. */
export interface ReviewResult {
  source: string;
  format: string;
  request?: { text: string; at: Location };
  calls: number;
  /** The first unsupported transition, or undefined when every claim is backed. */
  first?: FirstFinding;
  /** Every unsupported claim, in chain order (the first one included). */
  findings: Finding[];
}

function offRequest(request: string, call: IncidentCall): { asked: string; used: string } | undefined {
  const asked = idsInText(request);
  if (asked.length === 0) return undefined;
  const used = idsOfCall(call.args, call.target);
  if (used.some((u) => asked.some((a) => sameValue(a, u)))) return undefined;
  for (const u of used) {
    const twin = asked.find((a) => sameShape(a, u));
    if (twin !== undefined) return { asked: twin.value, used: u.value };
  }
  return undefined;
}

function completionOf(call: IncidentCall, evidence: Evidence): Completion {
  return {
    status: evidence.status,
    action: call.name,
    target: call.target,
    operationId: call.readback?.operationId ?? call.id,
    idempotencyKey: '',
    attempt: 1,
    postcondition: '',
    mode: 'committed',
    checks: call.readback?.checks ?? [],
    nextAllowedAction: 'none',
    safeToRepeat: call.readback?.safeToRepeat ?? call.safeToRepeat ?? 'unknown',
    message: '',
  };
}

// What the raw result said is what the adapter or model had in hand; when it already said "accepted",
// "timed out" or "bad arguments", that is the fact that was thrown away, whatever the read-back found later.
function classify(call: IncidentCall, evidence: Evidence): FailureClass {
  const raw = rawEvidence(call.result).kind;
  if (raw === 'transport' && call.result !== undefined) return 'transport_error';
  if (raw === 'accepted') return 'accepted_unfinished';
  if (raw === 'invalid_args') return 'wrong_arguments';
  switch (evidence.kind) {
    case 'transport':
      return 'transport_error';
    case 'accepted':
      return 'accepted_unfinished';
    case 'invalid_args':
      return 'wrong_arguments';
    case 'mismatch':
    case 'partial':
    case 'rejected':
      return 'readback_mismatch';
    case 'unavailable':
    case 'unread':
      return 'readback_unavailable';
    default:
      return 'wrong_text';
  }
}

// The status was honest upstream when someone put a supported status word in front of the model or the user.
function honestUpstream(call: IncidentCall, evidence: Evidence): boolean {
  const claimed = call.result?.claimed;
  if (claimed !== undefined && supports(evidence, claimLevel(claimed))) return true;
  return call.readback?.message !== undefined;
}

function callFacts(call: IncidentCall, evidence: Evidence) {
  return {
    callId: call.id,
    action: call.name,
    target: call.target,
    ...(call.readback?.operationId !== undefined ? { operationId: call.readback.operationId } : {}),
    evidence,
  };
}

function reviewCall(incident: Incident, call: IncidentCall, evidence: Evidence, out: Finding[]): void {
  const request = incident.request?.text;
  const drift = request === undefined ? undefined : offRequest(request, call);
  const claimedLevel = claimLevel(call.result?.claimed);
  const answered = incident.answer !== undefined && claimsCompletion(incident.answer.text);
  if (drift && (answered || claimedLevel === 'done')) {
    out.push({
      where: 'tool_call',
      at: call.at,
      class: 'wrong_arguments',
      claim: `${call.name}(${JSON.stringify(call.args)})`,
      claimLevel: claimedLevel,
      ...callFacts(call, evidence),
      detail: `the request names ${drift.asked} but ${call.name} was called on ${drift.used}, and the run went on to report the request done`,
    });
  }
  const result = call.result;
  if (result?.claimed !== undefined && !supports(evidence, claimedLevel)) {
    out.push({
      where: 'tool_result',
      at: result.at,
      class: classify(call, evidence),
      claim: result.claimed,
      claimLevel: claimedLevel,
      ...callFacts(call, evidence),
      detail: `the adapter reported "${result.claimed}" (${claimedLevel}) for ${call.name} on ${call.target}, but the evidence allows at most ${allowedWord(evidence)}: ${evidence.summary}`,
    });
  }
  const message = call.readback?.message;
  if (message !== undefined && call.readback !== undefined) {
    for (const v of guardAnswer(message, [completionOf(call, evidence)]).violations) {
      out.push({
        where: 'readback_message',
        at: call.readback.at,
        class: 'wrong_text',
        claim: v.sentence,
        word: v.claim,
        claimLevel: 'done',
        ...callFacts(call, evidence),
        detail: `the status is ${evidence.status}, but the text rendered for it says "${v.claim}": ${v.detail}`,
      });
    }
  }
}

function allowedWord(evidence: Evidence): string {
  switch (evidence.status) {
    case 'verified':
    case 'no_op':
      return '"done"';
    case 'pending':
      return '"accepted, not done"';
    case 'failed':
      return '"failed"';
    case 'partial':
      return 'the passed and failed counts';
    case 'unknown':
      return '"outcome unknown"';
  }
}

function reviewAnswer(incident: Incident, evidence: Map<IncidentCall, Evidence>, out: Finding[]): void {
  const answer = incident.answer;
  if (answer === undefined) return;
  const calls = incident.calls;
  const completions = calls.map((c) => completionOf(c, evidence.get(c)!));
  const byOp = new Map(calls.map((c, i) => [completions[i]!.operationId, c]));
  const firstOpen = calls.find((c) => evidence.get(c)!.status !== 'verified');
  const at = answer.at;
  // A claim about a target nothing acted on is reported as that, not as whichever call the guard tied it to.
  const strangers = new Set<string>();
  for (const hit of claimsAboutOtherTargets(answer.text, calls)) {
    strangers.add(`${hit.sentence}|${hit.word}`);
    out.push({
      where: 'final_answer',
      at,
      class: 'no_tool_call',
      claim: hit.sentence,
      word: hit.word,
      claimLevel: 'done',
      detail: `the answer says "${hit.word}" about ${hit.named}, but no tool call in this run acted on ${hit.named}: ${hit.sibling.name} ran on ${hit.sibling.target}`,
    });
  }
  for (const v of guardAnswer(answer.text, completions).violations) {
    if (strangers.has(`${v.sentence}|${v.claim}`)) continue;
    const call = callOf(v, byOp, firstOpen, calls.length);
    if (call === undefined) {
      out.push({
        where: 'final_answer',
        at,
        class: 'no_tool_call',
        claim: v.sentence,
        word: v.claim,
        claimLevel: 'done',
        detail: `the answer says "${v.claim}", but no tool call in this run produced that effect: ${v.detail}`,
      });
      continue;
    }
    const ev = evidence.get(call)!;
    out.push({
      where: 'final_answer',
      at,
      class: honestUpstream(call, ev) ? 'wrong_text' : classify(call, ev),
      claim: v.sentence,
      word: v.claim,
      claimLevel: 'done',
      ...callFacts(call, ev),
      detail: `the answer says "${v.claim}" about ${call.name} on ${call.target}, but the evidence allows at most ${allowedWord(ev)}: ${ev.summary}`,
    });
  }
  for (const hit of unsupportedFailures(answer.text, calls, evidence)) {
    const ev = evidence.get(hit.call)!;
    out.push({
      where: 'final_answer',
      at,
      class: honestUpstream(hit.call, ev) ? 'wrong_text' : classify(hit.call, ev),
      claim: hit.sentence,
      word: hit.word,
      claimLevel: 'failed',
      ...callFacts(hit.call, ev),
      detail: `the answer says "${hit.word}", a definite failure of ${hit.call.name} on ${hit.call.target}, but ${notFailed(ev)}`,
    });
  }
}

// Why "failed" is too strong for this evidence, and what a user told so would wrongly do.
function notFailed(evidence: Evidence): string {
  const read = evidence.summary;
  if (evidence.status === 'verified' || evidence.status === 'no_op') {
    return `the effect holds (${read}); a retry on the strength of this answer would do it twice`;
  }
  if (evidence.status === 'pending')
    return `the work was accepted and is still open (${read}); say "queued, not done"`;
  return `${read}; the honest word is "outcome unknown", since a retry may do it twice`;
}

function callOf(
  v: Violation,
  byOp: Map<string, IncidentCall>,
  firstOpen: IncidentCall | undefined,
  count: number,
): IncidentCall | undefined {
  if (v.kind === 'unverified_claim' && v.operationId !== undefined) return byOp.get(v.operationId);
  if (v.kind === 'unattributed_claim' && count > 0) return firstOpen;
  return undefined;
}

// "All done, the invoice was emailed" makes two claims in one sentence about one call: one finding is enough.
function dedupe(findings: Finding[]): void {
  const seen = new Set<string>();
  for (let i = 0; i < findings.length; i++) {
    const f = findings[i]!;
    const key = `${f.at.order}|${f.where}|${f.class}|${f.callId ?? ''}|${f.claim}`;
    if (seen.has(key)) findings.splice(i--, 1);
    else seen.add(key);
  }
}

/** Reviews an incident: every unsupported claim in chain order, and the first one with its repair and recovery. */
export function review(incident: Incident): ReviewResult {
  const evidence = new Map(incident.calls.map((c) => [c, evidenceFor(c)] as const));
  const findings: Finding[] = [];
  for (const call of incident.calls) reviewCall(incident, call, evidence.get(call)!, findings);
  reviewAnswer(incident, evidence, findings);
  // A stable sort keeps, within one line or event, the order the checks ran in.
  findings.sort((a, b) => a.at.order - b.at.order);
  dedupe(findings);
  const result: ReviewResult = {
    source: incident.source,
    format: incident.format,
    ...(incident.request ? { request: { text: incident.request.text, at: incident.request.at } } : {}),
    calls: incident.calls.length,
    findings,
  };
  const first = findings[0];
  if (first !== undefined) {
    const call = incident.calls.find((c) => c.id === first.callId);
    const safe = call?.readback?.safeToRepeat ?? call?.safeToRepeat;
    result.first = {
      ...first,
      repair: firstRepair(first.class),
      recovery: recoveryFor(
        first.class,
        first.evidence,
        safe,
        first.operationId ?? call?.readback?.operationId,
      ),
    };
  }
  return result;
}
