/**
 * Definite failure claims in a final answer: "the refund failed", "the email wasn't sent". A failure
 * is a strong word too: said of a timeout whose effect may still land, or of work that did land, it
 * invites the user to try again and do it twice. Hedged, conditional and not-yet sentences ("may have
 * failed", "not sent yet", "I could not confirm it was sent") claim no failure and are left out.
 */
import { EFFECT_WORDS, isHedge, maskQuoted, splitClauses, splitSentences } from '../messages/words.js';

/** One sentence that says an effect did not happen. */
export interface FailureClaim {
  sentence: string;
  /** The clause the failure is stated in, to tell which call it is about. */
  clause: string;
  /** The words that make the claim ("failed", "wasn't sent"). */
  word: string;
  /** `failed`: it went wrong; `not_done`: it did not happen, which a no-op or open work also allows. */
  kind: 'failed' | 'not_done';
}

const EFFECTS = new Set(EFFECT_WORDS);
// Words that put the whole sentence in doubt: it then reports no definite outcome.
const DOUBT =
  /\b(?:unknown|unclear|uncertain|unconfirmed|unverified|not sure|unsure|whether|may|might|possibly|perhaps|maybe|probably|(?:could ?n[o']t|can ?n[o']t|cannot|unable to|failed to|did ?n[o']t) (?:confirm|verify|tell|check|determine|read|reach|see|know))\b/i;
// Words that make a clause say "not yet", which open work allows.
const NOT_YET = /\b(?:yet|still|pending|queued|in progress|so far)\b/i;
// "the read-back failed", "verification failed": the check failed, not the effect.
const CHECKS = /\b(?:verif\w*|read-?back|reads?|lookups?|checks?|checking|confirmation|poll\w*|status)\b/i;
const FAILED = new Set(['failed', 'fails', 'unsuccessful']);
const DETERMINERS = new Set('the a an this that its my your our their every each'.split(' '));
// The words of a negated past effect: "was not sent", "hasn't been refunded", "never got closed".
const NEGATED_PART = new Set(
  'not never was were is are has have had been be did could can got get'.split(' '),
);

function negation(word: string): boolean {
  return word === 'not' || word === 'never' || word.endsWith("n't");
}

function failureIn(clause: string): Pick<FailureClaim, 'word' | 'kind'> | undefined {
  const masked = maskQuoted(clause);
  const words = (masked.toLowerCase().match(/[a-z][a-z']*/g) ?? []).map((t) => t.replace(/'+$/, ''));
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (FAILED.has(w)) {
      // "the failed payment" names a thing; it does not say this run's effect failed.
      if (DETERMINERS.has(words[i - 1] ?? '')) continue;
      const hedged = words.slice(Math.max(0, i - 5), i).some((b) => isHedge(b));
      const aboutCheck = CHECKS.test(words.slice(0, i).join(' '));
      if (!hedged && !aboutCheck) return { word: w, kind: 'failed' };
      continue;
    }
    // "did not go through", "never went through".
    const through = (w === 'go' || w === 'went') && words[i + 1] === 'through';
    // "was not sent", "wasn't sent", "never sent", "couldn't be refunded": a negated effect word.
    if (!through && !EFFECTS.has(w)) continue;
    let from = i;
    while (from > 0 && i - from < 4 && (negation(words[from - 1]!) || NEGATED_PART.has(words[from - 1]!)))
      from--;
    const before = words.slice(from, i);
    if (before.some(negation)) {
      const word = `${before.join(' ')} ${w}${through ? ' through' : ''}`;
      return { word, kind: through ? 'failed' : 'not_done' };
    }
  }
  return undefined;
}

/** Every sentence of an answer that states, without hedging, that an effect did not happen. */
export function findFailureClaims(text: string): FailureClaim[] {
  const out: FailureClaim[] = [];
  for (const sentence of splitSentences(text)) {
    const norm = sentence.replace(/’/g, "'");
    if (maskQuoted(norm).trim().endsWith('?') || DOUBT.test(maskQuoted(norm))) continue;
    for (const range of splitClauses(norm)) {
      const clause = norm.slice(range.start, range.end).trim();
      const found = NOT_YET.test(maskQuoted(clause)) ? undefined : failureIn(clause);
      if (found !== undefined) {
        out.push({ sentence, clause, ...found });
        break;
      }
    }
  }
  return out;
}
