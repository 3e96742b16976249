/**
 * The final-answer guard: checks an agent's text against the completions of its run and
 * reports every sentence that claims more than the evidence. No model is involved; the same
 * text and completions always give the same verdict.
 *
 * Attribution rules (which completion a claim is about), scored per claim:
 * - operation id named in the claim's clause: +10 (the strongest, exact reference);
 * - target identifier named in the clause (`ticket:T-104` → `T-104`, `email:ana@x.com` →
 *   `ana@x.com` or `ana`, `order:42` → `42`), case-insensitive, whole token: +3;
 * - the claim's verb stem names the action ("sent" → `send_email`, or a synonym: "closed" →
 *   `resolve_ticket`): +4;
 * - a noun of the action or target kind in the clause ("the email", "the migration"): +1.
 * The highest-scoring completions win (ties keep all of them, so an ambiguous claim must hold
 * for each). Generic words ("done", "all set") carry no verb, so they may also borrow the
 * subject of their whole sentence ("Done — T-104 is resolved").
 *
 * Judgement of an attributed claim: `verified` allows any claim; `no_op` allows a claim that a
 * state holds ("T-104 is resolved", "was already resolved") but not one that reports an act
 * ("I resolved T-104", "Done"), since nothing was done; `partial` allows a claim whose clause
 * states the exact counts ("8 of 10 records migrated"); every other status refuses it. A shadow
 * completion (`completion.shadow` set) is an operator observation, never proof: it supports no claim.
 */
import type { Completion, Status } from '../contract/types.js';
import {
  type EffectClaim,
  findClaims,
  isDeterminer,
  sameWord,
  splitSentences,
  stemMatches,
} from './words.js';

/** What kind of overclaim a sentence makes. */
export type ViolationKind = 'unverified_claim' | 'no_completion' | 'unattributed_claim';

/** One claim in the answer that the completions do not support, with what it was matched to. */
export interface Violation {
  kind: ViolationKind;
  /** The sentence that makes the claim. */
  sentence: string;
  /** The effect word that makes it ("sent", "done"). */
  claim: string;
  target?: string;
  action?: string;
  status?: Status;
  operationId?: string;
  /** One sentence for a human or a model: what is wrong and what to say instead. */
  detail: string;
}

/** The guard's verdict: `ok` is true exactly when there are no violations. */
export interface GuardResult {
  ok: boolean;
  violations: Violation[];
}

const STOPWORDS = new Set(
  (
    'the a an and or of to for on in at by with from is are was were be been it its this that these those ' +
    'i we you he she they me us them my our your their has have had do does did not no all any some ' +
    'get set make run item items'
  ).split(' '),
);
// Nouns too vague to name a subject: "your request is complete" says nothing about which one.
const VAGUE = new Set(
  'request requests task tasks thing things work job jobs action actions change changes step steps one ones stuff everything operation operations'.split(
    ' ',
  ),
);

interface Profile {
  completion: Completion;
  ids: string[];
  actionTokens: string[];
  nouns: string[];
}

function wordsOf(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 3 && !STOPWORDS.has(w));
}

function targetIds(target: string): string[] {
  const ids = new Set<string>();
  const colon = target.indexOf(':');
  if (colon >= 0) ids.add(target);
  const rest = target.slice(colon + 1).trim();
  ids.add(rest);
  ids.add(rest.slice(rest.lastIndexOf(':') + 1));
  const at = rest.indexOf('@');
  // People say "the email to Ana" far more often than they repeat the address.
  if (at > 0) ids.add(rest.slice(0, at));
  return [...ids].filter((id) => /\d/.test(id) || (id.length >= 2 && !STOPWORDS.has(id.toLowerCase())));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function containsId(text: string, id: string): boolean {
  if (id.trim() === '') return false;
  // Whole token: "T-104" must not match inside "T-1045", "42" not inside "op_42" or "4.2".
  return new RegExp(`(?<![\\w@.-])${escapeRegExp(id)}(?![\\w@-]|\\.\\w)`, 'i').test(text);
}

function profile(completion: Completion): Profile {
  const target = String(completion.target ?? '');
  const colon = target.indexOf(':');
  const actionTokens = wordsOf(String(completion.action ?? ''));
  const kind = colon > 0 ? wordsOf(target.slice(0, colon)) : [];
  return { completion, ids: targetIds(target), actionTokens, nouns: [...actionTokens, ...kind] };
}

function score(claim: EffectClaim, p: Profile, text: string, withStem: boolean): number {
  let s = 0;
  if (containsId(text, String(p.completion.operationId ?? ''))) s += 10;
  if (p.ids.some((id) => containsId(text, id))) s += 3;
  if (withStem && p.actionTokens.some((t) => stemMatches(claim.stem, t))) s += 4;
  const words = wordsOf(text);
  if (words.some((w) => p.nouns.some((n) => sameWord(w, n)))) s += 1;
  return s;
}

function best(scored: { p: Profile; s: number }[]): Profile[] {
  const top = Math.max(0, ...scored.map((x) => x.s));
  return top === 0 ? [] : scored.filter((x) => x.s === top).map((x) => x.p);
}

function attribute(claim: EffectClaim, sentence: string, profiles: Profile[]): Profile[] {
  const inClause = best(profiles.map((p) => ({ p, s: score(claim, p, claim.clause, true) })));
  if (inClause.length > 0 || !claim.generic) return inClause;
  return best(profiles.map((p) => ({ p, s: score(claim, p, sentence, false) })));
}

function hasSubject(clause: string): boolean {
  const tokens = clause.replace(/’/g, "'").toLowerCase().split(/\s+/);
  return tokens.some((t, i) => {
    if (/[\d@#]/.test(t)) return true;
    const next = (tokens[i + 1] ?? '').replace(/[^a-z'-]/g, '');
    return (
      isDeterminer(t.replace(/[^a-z']/g, '')) && next.length >= 3 && !STOPWORDS.has(next) && !VAGUE.has(next)
    );
  });
}

function statesCounts(clause: string, c: Completion): boolean {
  if (c.units === undefined) return false;
  const { passed, required } = c.units;
  return new RegExp(`\\b${passed}\\s*(?:of|/|out of)\\s*${required}\\b`, 'i').test(clause);
}

function allowed(claim: EffectClaim, c: Completion): boolean {
  if (c.shadow !== undefined) return false;
  switch (c.status) {
    case 'verified':
      return true;
    case 'no_op':
      return !claim.agentive;
    case 'partial':
      return statesCounts(claim.clause, c);
    default:
      return false;
  }
}

const ADVICE: Record<Status, string> = {
  verified: 'it is verified',
  no_op: 'say the state already held and nothing was changed',
  pending: 'say it was accepted and is not verified yet',
  partial: 'give the passed and failed counts',
  unknown: 'say the outcome is unknown and the operation is kept for recovery',
  failed: 'say it failed and why',
};

function unverified(sentence: string, claim: EffectClaim, c: Completion): Violation {
  const why =
    c.shadow !== undefined
      ? `its only evidence is a shadow observation (operation ${c.operationId}), which is never proof for users; report what the tool itself returned, not readback's status.`
      : `its status is ${c.status} (operation ${c.operationId}); ${ADVICE[c.status]}.`;
  return {
    kind: 'unverified_claim',
    sentence,
    claim: claim.word,
    target: c.target,
    action: c.action,
    status: c.status,
    operationId: c.operationId,
    detail: `"${claim.word}" claims an effect of ${c.action} on ${c.target}, but ${why}`,
  };
}

/** Checks an answer against the run's completions and lists every claim the evidence does not support. */
export function guardAnswer(text: string, completions: readonly Completion[]): GuardResult {
  const profiles = completions.map(profile);
  const notVerified = completions.filter((c) => c.status !== 'verified' || c.shadow !== undefined).length;
  const violations: Violation[] = [];
  const seen = new Set<string>();
  const add = (v: Violation): void => {
    const key = `${v.kind}|${v.sentence}|${v.claim}|${v.operationId ?? ''}`;
    if (seen.has(key)) return;
    seen.add(key);
    violations.push(v);
  };
  for (const sentence of splitSentences(text)) {
    for (const claim of findClaims(sentence)) {
      const matched = attribute(claim, sentence, profiles);
      for (const p of matched) {
        if (!allowed(claim, p.completion)) add(unverified(sentence, claim, p.completion));
      }
      if (matched.length > 0) continue;
      if (claim.generic && !hasSubject(claim.clause)) {
        if (completions.length === 0 || notVerified > 0) {
          const why =
            completions.length === 0
              ? 'no state-changing action ran'
              : `${notVerified} of ${completions.length} actions are not verified`;
          add({
            kind: 'unattributed_claim',
            sentence,
            claim: claim.word,
            detail: `"${claim.word}" claims completion without naming what, but ${why}; name each action and its status.`,
          });
        }
        continue;
      }
      add({
        kind: 'no_completion',
        sentence,
        claim: claim.word,
        detail: `"${claim.word}" claims an effect that no action in this run produced or verified; do not report it.`,
      });
    }
  }
  return { ok: violations.length === 0, violations };
}
