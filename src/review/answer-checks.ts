/**
 * The two final-answer checks the guard does not make, because it judges effect claims against the
 * completions it is given: a definite failure claim ("the refund failed") where the evidence says the
 * effect landed or may still land, and an effect claim about a target no call in the run acted on
 * ("order 43 was refunded" when the only refund ran on order 42).
 */
import { findClaims, sameWord, splitSentences, stemMatches } from '../messages/words.js';
import { type FailureClaim, findFailureClaims } from './failure-claims.js';
import { idsInText, idsOfCall, type NamedId, sameShape, sameValue } from './identifiers.js';
import { type Evidence, supports } from './ladder.js';
import type { IncidentCall } from './model.js';

/** A failure claim in the answer that the evidence of the call it is about does not allow. */
export interface FailureHit {
  sentence: string;
  word: string;
  call: IncidentCall;
}

/** An effect claim in the answer that names only targets no call of the run acted on. */
export interface StrangerHit {
  sentence: string;
  word: string;
  /** The identifier the claim names ("43"). */
  named: string;
  /** A call on a target of the same kind, which the claim may have been meant to report. */
  sibling: IncidentCall;
}

function nameWords(call: IncidentCall): string[] {
  return call.name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w.length >= 3);
}

// A claim is about the calls whose target it names; failing that, the calls whose action it names;
// failing that, any call of the run (so an unattributed "it failed" must hold for one of them).
function callsNamedIn(clause: string, calls: readonly IncidentCall[]): IncidentCall[] {
  const ids = idsInText(clause);
  const byId = calls.filter((c) => idsOfCall(c.args, c.target).some((u) => ids.some((a) => sameValue(a, u))));
  if (byId.length > 0) return byId;
  const words = clause.toLowerCase().match(/[a-z]{3,}/g) ?? [];
  const byName = calls.filter((c) =>
    nameWords(c).some((t) => words.some((w) => sameWord(w, t) || stemMatches(w, t))),
  );
  return byName.length > 0 ? byName : [...calls];
}

// "It failed" needs a failed or partial read; "it was not sent" is also true of a no-op or of work still open.
function allowsFailure(evidence: Evidence, kind: FailureClaim['kind']): boolean {
  if (supports(evidence, 'failed')) return true;
  return kind === 'not_done' && (evidence.status === 'no_op' || evidence.status === 'pending');
}

/** Failure claims in the answer that no call they are about has the evidence for. */
export function unsupportedFailures(
  text: string,
  calls: readonly IncidentCall[],
  evidence: ReadonlyMap<IncidentCall, Evidence>,
): FailureHit[] {
  if (calls.length === 0) return [];
  const hits: FailureHit[] = [];
  for (const claim of findFailureClaims(text)) {
    const about = callsNamedIn(claim.clause, calls);
    // Ambiguity goes the answer's way: one call it may be about that did fail is enough.
    if (about.some((c) => allowsFailure(evidence.get(c)!, claim.kind))) continue;
    hits.push({ sentence: claim.sentence, word: claim.word, call: about[0]! });
  }
  return hits;
}

/** Effect claims whose clause names targets of a kind the run acted on, but none the run acted on. */
export function claimsAboutOtherTargets(text: string, calls: readonly IncidentCall[]): StrangerHit[] {
  const acted = calls.map((c) => ({ call: c, ids: idsOfCall(c.args, c.target) }));
  const hits: StrangerHit[] = [];
  for (const sentence of splitSentences(text)) {
    for (const claim of findClaims(sentence)) {
      const named = idsInText(claim.clause);
      if (named.some((n) => acted.some((a) => a.ids.some((u) => sameValue(n, u))))) continue;
      const stranger = named
        .map((n): [NamedId, IncidentCall | undefined] => [
          n,
          acted.find((a) => a.ids.some((u) => sameShape(n, u)))?.call,
        ])
        .find(([, sibling]) => sibling !== undefined);
      if (stranger === undefined) continue;
      hits.push({ sentence, word: claim.word, named: stranger[0].value, sibling: stranger[1]! });
      break;
    }
  }
  return hits;
}
