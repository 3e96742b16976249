/**
 * Finding claims: which effect words in a sentence affirm that an effect happened, once hedges, negations, reported
 * speech and questions are taken out. The words themselves are in `vocabulary.ts`, the cutting into sentences and
 * clauses in `sentences.ts`, and how letters are read in `letters.ts`.
 *
 * Everything here is deterministic on purpose: the guard must give the same verdict for the
 * same text every time, so it can sit in a test suite and in a production output filter.
 */

import { foldLookalikes, foldStyled, stripInvisible } from './letters.js';
import { type ClauseRange, maskQuoted, SPAN, splitClauses, splitSentences } from './sentences.js';
import {
  ACHIEVED,
  ACT_WORDS,
  ASSERTING,
  afterCopula,
  BASE_FORMS,
  DETERMINERS,
  DOUBT,
  type EffectWord,
  EVIDENTIAL,
  FIRST_PERSON,
  HAD_ADVERBS,
  IMPERATIVES,
  isHedge,
  OBSERVATION_STEMS,
  PERCEPTION,
  PHRASES,
  REQUESTS,
  SOLO,
  SUBORDINATORS,
  WORDS,
} from './vocabulary.js';

export { foldLookalikes, stripInvisible } from './letters.js';
export { type ClauseRange, maskQuoted, splitClauses, splitSentences } from './sentences.js';
export { EFFECT_WORDS, isHedge } from './vocabulary.js';

/** One affirmative occurrence of an effect word in a sentence. */
export interface EffectClaim {
  /** The effect word or phrase as found, lower-cased ("sent", "all set"). */
  word: string;
  /** Its verb stem ("sent" → "send"), used to tie the claim to an action name. */
  stem: string;
  /** Character offset of the word in the sentence, once invisible format characters are removed. */
  index: number;
  /** True for words that say "finished" without saying what ("done", "complete", "all set"). */
  generic: boolean;
  /** True when the claim reports an act ("I resolved it"), false when it reports a state ("it is resolved"). */
  agentive: boolean;
  /** The clause the claim sits in, which bounds both its hedges and its subject. */
  clause: string;
  /**
   * True for idioms that claim an effect only when the clause names what it is about: "the email
   * went out" claims a send, "the power went out" does not.
   */
  idiom: boolean;
  /**
   * True when the word reports sending or submitting a request ("I submitted the refund request", "your
   * request was sent"): that the request went out, which an accepted (pending) operation supports, not that
   * its effect happened.
   */
  aboutRequest: boolean;
}

interface Token {
  text: string;
  index: number;
}

function tokenize(masked: string, from: number, to: number): Token[] {
  const tokens: Token[] = [];
  const word = /[a-z][a-z']*/g;
  const slice = masked.slice(from, to).toLowerCase();
  for (let m = word.exec(slice); m !== null; m = word.exec(slice)) {
    tokens.push({ text: m[0].replace(/'+$/, ''), index: from + m.index });
  }
  return tokens;
}

function matchEffect(
  tokens: Token[],
  i: number,
): { word: string; effect: EffectWord; length: number } | null {
  for (const phrase of PHRASES) {
    if (phrase.effect.afterCopula === true && !afterCopula(tokens[i - 1]?.text)) continue;
    if (phrase.words.every((w, k) => tokens[i + k]?.text === w)) {
      return { word: phrase.words.join(' '), effect: phrase.effect, length: phrase.words.length };
    }
  }
  const text = tokens[i]?.text ?? '';
  const solo = SOLO[text];
  if (solo !== undefined && tokens.length === 1) return { word: text, effect: solo, length: 1 };
  const base = BASE_FORMS.get(text);
  if (base !== undefined && tokens[i - 1]?.text === 'to' && ACHIEVED.has(tokens[i - 2]?.text ?? '')) {
    return { word: text, effect: base, length: 1 };
  }
  const effect = WORDS[text];
  if (effect === undefined) return null;
  // "complete the form" is an imperative verb, not the adjective "complete".
  if (text === 'complete' && DETERMINERS.has(tokens[i + 1]?.text ?? '')) return null;
  return { word: text, effect, length: 1 };
}

const HEDGE_WINDOW = 5;

// True when the hedge word at k does not, in context, hedge the effect word at i
// ("once again" repeats an act, "I can confirm" asserts).
function isFalseHedge(tokens: Token[], k: number, i: number): boolean {
  const t = tokens[k]!.text;
  const next = tokens[k + 1]?.text ?? '';
  // "about to", "going to" look ahead; "about an hour ago", "going through the logs" do not.
  if (t === 'about' || t === 'going') return next !== 'to';
  if (t === 'once') return next === 'again' || next === 'more';
  // "Yet the email was delivered" opens with the conjunction; only "not yet", "yet to" look ahead.
  if (t === 'yet') return k === 0;
  if (t === 'can' || t === 'could') return ASSERTING.has(next);
  if (t.endsWith("'d")) return tokens.slice(k + 1, i).every((x) => HAD_ADVERBS.has(x.text));
  return false;
}

function isImperative(tokens: Token[], i: number): boolean {
  const first = tokens[0]?.text === 'please' ? 1 : 0;
  const verb = tokens[first]?.text ?? '';
  if (first >= i) return false;
  return IMPERATIVES.has(verb) || (verb === 'make' && tokens[first + 1]?.text === 'sure');
}

// The first token of a clause whose scope hedges every effect word after it (a subordinate clause, a
// request, a doubted word of knowing), or the clause's length. Found once per clause, so a long clause
// with many effect words costs one pass, not one pass per word.
function scopeHedgeStart(tokens: Token[]): number {
  let doubted = false;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!.text;
    const before = tokens.slice(Math.max(0, k - 2), k).map((x) => x.text);
    if (SUBORDINATORS.has(t) && !isFalseHedge(tokens, k, k + 1)) return k;
    if (REQUESTS.has(t) && !before.includes('as')) return k;
    if (t === 'soon' && tokens[k + 1]?.text === 'as') return k;
    // "so that it is delivered tomorrow" states a purpose, not a result.
    if (t === 'so' && tokens[k + 1]?.text === 'that') return k;
    if (DOUBT.has(t) || t.endsWith("n't")) doubted = true;
    // "I can confirm" asserts even after an unrelated "no" ("with no errors I can confirm ...").
    else if (doubted && EVIDENTIAL.has(t) && !['can', 'could'].includes(before[1] ?? '')) return k;
  }
  return tokens.length;
}

function isHedged(tokens: Token[], i: number, scopeStart: number): boolean {
  if (isImperative(tokens, i) || scopeStart < i) return true;
  for (let k = Math.max(0, i - HEDGE_WINDOW); k < i; k++) {
    const t = tokens[k]!.text;
    if ((isHedge(t) || t === 'about' || t === 'going') && !isFalseHedge(tokens, k, i)) return true;
  }
  // "to" right before a form like "complete" makes an infinitive ("to complete"), unless it is
  // achieved ("able to complete").
  return tokens[i - 1]?.text === 'to' && !ACHIEVED.has(tokens[i - 2]?.text ?? '');
}

function isAgentive(tokens: Token[], i: number, length: number, word: string, stem: string): boolean {
  if (OBSERVATION_STEMS.has(stem)) return false;
  if (ACT_WORDS.has(word)) return true;
  const window = tokens.slice(Math.max(0, i - HEDGE_WINDOW), i).map((t) => t.text);
  const speaker = window.findLastIndex((t) => FIRST_PERSON.has(t));
  if (speaker >= 0) return !window.slice(speaker + 1).some((t) => PERCEPTION.has(t));
  // A clause that opens with the effect word and goes on has dropped its subject: "Resolved T-104".
  return i === 0 && tokens.length > length;
}

// Verbs that hand a request over; what the request asks for is a further effect ("processed", "approved" and
// "resolved" a request report that effect and are not in this list).
const TRANSMITTING = new Set(['send', 'submit', 'receive']);
const REQUEST_NOUNS = new Set(['request', 'requests']);
// Words that may stand between the verb and its object noun ("sent the refund request", "submitted your
// cancellation request"); a preposition ends the object ("sent the email per your request").
const PREPOSITIONS = new Set('per at on upon by with to for from after as about via in of'.split(' '));
const PASSIVE_AUXILIARIES = new Set(
  'was were is are has have had been being already just successfully now'.split(' '),
);
const OBJECT_REACH = 4;

// True when the effect word at i sends or submits a request: its object ("submitted the refund request") or,
// in the passive, its subject ("the refund request was submitted") is the noun "request".
function isAboutRequest(tokens: Token[], i: number, length: number, stem: string): boolean {
  if (!TRANSMITTING.has(stem)) return false;
  for (let k = i + length; k < Math.min(tokens.length, i + length + OBJECT_REACH); k++) {
    const t = tokens[k]!.text;
    if (REQUEST_NOUNS.has(t)) return true;
    if (PREPOSITIONS.has(t) || matchEffect(tokens, k) !== null) break;
  }
  let k = i - 1;
  while (k >= 0 && PASSIVE_AUXILIARIES.has(tokens[k]!.text)) k--;
  return k < i - 1 && k >= 0 && REQUEST_NOUNS.has(tokens[k]!.text);
}

// Quote marks a speaker uses for emphasis or as the whole answer, not to report someone else's words.
const QUOTE_MARKS = /“[^”\n]*”|"[^"\n]*"/g;
const COPULA = /\b(?:is|are|was|were|been|now|already)\s*$/i;
// "the tool returned “sent”" reports what another party said, which the speaker may quote honestly.
const REPORTING =
  /\b(?:said|says|say|reported|reports|returned|returns|responded|responds|shows|showed|displays|displayed|reads)\b/i;
const MAX_SCARE_WORDS = 3;
const LOOK_BACK = 200;

/**
 * Drops the quote marks (keeping every offset) around spans that are the speaker's own words: a whole sentence
 * in quotes (“The email was sent.”), and a short span right after a copula (the email was “sent”), unless the
 * sentence reports what someone else said. Code spans are identifiers and stay masked.
 */
function unquoteOwnWords(sentence: string): string {
  if (/^[^\p{L}\p{N}]*$/u.test(maskQuoted(sentence))) {
    return sentence.replace(SPAN, (m) => ` ${m.slice(1, -1)} `);
  }
  return sentence.replace(QUOTE_MARKS, (m, offset: number) => {
    // A bounded look-back: a reporting verb far back in a long sentence reports something else.
    const before = sentence.slice(Math.max(0, offset - LOOK_BACK), offset);
    const words = m.slice(1, -1).trim().split(/\s+/).length;
    if (!COPULA.test(before) || REPORTING.test(maskQuoted(before)) || words > MAX_SCARE_WORDS) return m;
    return ` ${m.slice(1, -1)} `;
  });
}

/** Returns each affirmative effect word in a sentence; negated, hedged, reported or questioned ones are left out. */
export function findClaims(input: string): EffectClaim[] {
  // Offsets and clauses are of the sentence as a reader sees it, without invisible characters; its words are
  // matched with lookalike letters read as the ASCII ones they pass for (same offsets, so clauses keep the text).
  const sentence = stripInvisible(input);
  // Styled letters (𝐝𝐨𝐧𝐞) are two units each: words are matched in the folded text, and its offsets mapped back.
  const styled = foldStyled(sentence);
  const at = (offset: number) => styled.origin?.[offset] ?? offset;
  const norm = unquoteOwnWords(foldLookalikes(styled.text).replace(/’/g, "'"));
  const masked = maskQuoted(norm);
  // A question asks about an effect; it does not assert one.
  if (masked.trim().endsWith('?')) return [];
  const claims: EffectClaim[] = [];
  const ranges = splitClauses(norm);
  ranges.forEach((range, r) => {
    const tokens = tokenize(masked, range.start, range.end);
    // How far this clause's claims reach into the clauses around it, found at its first claim: most clauses claim
    // nothing, and each walk may cross every clause before or after ("T-1 and T-2 and … are closed").
    let reach: ClauseRange | undefined;
    const scopeStart = scopeHedgeStart(tokens);
    // Only a claim with nothing but leading adverbs before it can share the subject of the clause before.
    const opening = leadingAdverbs(tokens);
    for (let i = 0; i < tokens.length; i++) {
      const hit = matchEffect(tokens, i);
      if (hit === null) continue;
      // "I sent nothing", "changed none of them": the object takes the claim back.
      const object = tokens[i + hit.length]?.text ?? '';
      const speakers = hit.effect.notBySpeaker === true && (bySpeaker(tokens, i) || troubleAfter(tokens, i));
      if (!isHedged(tokens, i, scopeStart) && object !== 'nothing' && object !== 'none' && !speakers) {
        reach ??= { start: coordinatedStart(masked, ranges, r), end: coordinatedEnd(masked, ranges, r) };
        claims.push({
          word: hit.word,
          stem: hit.effect.stem,
          index: at(tokens[i]!.index),
          generic: hit.effect.generic === true,
          agentive: isAgentive(tokens, i, hit.length, hit.word, hit.effect.stem),
          clause: sentence
            .slice(
              at(
                (i <= opening ? sharedStart(masked, ranges, r, tokens, i, hit.length) : undefined) ??
                  reach.start,
              ),
              at(reach.end),
            )
            .trim(),
          idiom: hit.effect.idiom === true,
          aboutRequest:
            hit.effect.inTransit === true || isAboutRequest(tokens, i, hit.length, hit.effect.stem),
        });
      }
      i += hit.length - 1;
    }
  });
  return claims;
}

// True when the speaker is the subject of the word at i: "we received your request", "I've received it".
function bySpeaker(tokens: Token[], i: number): boolean {
  return tokens.slice(Math.max(0, i - HEDGE_WINDOW), i).some((t) => FIRST_PERSON.has(t.text));
}

// "The email received a bounce" reports trouble coming back, not the effect arriving.
const TROUBLE = new Set(
  'error errors bounce bounces rejection complaint complaints warning failure'.split(' '),
);
function troubleAfter(tokens: Token[], i: number): boolean {
  return tokens.slice(i + 1, i + 4).some((t) => TROUBLE.has(t.text));
}

// A clause that is only more objects of the one before ("I resolved T-104 and T-105", "closed T-1,
// T-2 and T-3") has no verb of its own; without this the claim would cover T-104 alone.
const FINITE = new Set(['is', 'are', 'was', 'were', 'has', 'have', 'had', 'will', 'still', 'not', 'remains']);
const MAX_OBJECT_WORDS = 4;

// A clause that only repeats the claim before it for another subject ("Bob's too", "and so was Bob's",
// "as was the one to Bob") makes the same claim about that subject.
const ECHO_JOINTS = new Set([',', ';', 'and', ', and', '; and', '—', '–']);
const ECHO_AUXILIARIES = new Set('was were is are did does has have had'.split(' '));
const MAX_ECHO_WORDS = 8;

function isEcho(tokens: Token[]): boolean {
  if (tokens.length === 0 || tokens.length > MAX_ECHO_WORDS) return false;
  if (tokens.some((t, i) => isHedge(t.text) || matchEffect(tokens, i) !== null)) return false;
  const [first, second] = [tokens[0]!.text, tokens[1]?.text ?? ''];
  const last = tokens.at(-1)!.text;
  return (
    ((first === 'so' || first === 'as') && ECHO_AUXILIARIES.has(second)) ||
    first === 'likewise' ||
    last === 'too' ||
    last === 'also' ||
    (last === 'well' && tokens.at(-2)?.text === 'as')
  );
}

function coordinatedEnd(masked: string, ranges: readonly ClauseRange[], r: number): number {
  let end = ranges[r]!.end;
  for (let next = r + 1; next < ranges.length; next++) {
    // The blank between ", and" or "and then" is a range of its own: part of the joint, not a clause.
    if (masked.slice(ranges[next]!.start, ranges[next]!.end).trim() === '') continue;
    const joint = masked.slice(end, ranges[next]!.start).trim().toLowerCase();
    const tokens = tokenize(masked, ranges[next]!.start, ranges[next]!.end);
    if (ECHO_JOINTS.has(joint) && isEcho(tokens)) {
      end = ranges[next]!.end;
      continue;
    }
    if (joint !== 'and' && joint !== ',' && joint !== ', and') break;
    if (!nounsOnly(tokens, false)) break;
    end = ranges[next]!.end;
  }
  return end;
}

// Words that may stand before a verb that shares the subject of the clause before: "and then delivered".
const LEADING_ADVERBS = new Set(['also', 'then', 'already', 'just', 'successfully', 'finally', 'so']);
const SHARED_JOINTS = new Set(['', 'and', 'so', 'then', 'and then', 'and so']);

// How many tokens open the clause as leading adverbs. Counted once per clause: checking every token before each
// claim made a clause of n claims cost n² (one of 4 000 claims, 100 000 characters, took a second).
function leadingAdverbs(tokens: Token[]): number {
  let count = 0;
  while (count < tokens.length && LEADING_ADVERBS.has(tokens[count]!.text)) count++;
  return count;
}

// A verb that opens its clause with no subject or object of its own shares the subject of the clause before:
// "the email to Ana was sent and delivered" is about Ana's email, "I closed T-104 and then archived it" about T-104.
// The caller checks that only leading adverbs come before the verb (`leadingAdverbs`).
function sharedStart(
  masked: string,
  ranges: readonly ClauseRange[],
  r: number,
  tokens: Token[],
  i: number,
  length: number,
): number | undefined {
  const rest = masked.slice(tokens[i + length - 1]!.index, ranges[r]!.end).replace(/^[a-z']+/i, '');
  const restTokens = rest.toLowerCase().match(/[a-z][a-z']*/g) ?? [];
  if (/[\d@#]/.test(rest) || restTokens.some((t) => isDeterminer(t) || FIRST_PERSON.has(t))) return undefined;
  let prev = r - 1;
  while (prev >= 0 && masked.slice(ranges[prev]!.start, ranges[prev]!.end).trim() === '') prev--;
  if (prev < 0) return undefined;
  const joint = masked
    .slice(ranges[prev]!.end, ranges[r]!.start)
    .toLowerCase()
    .replace(/[\s,]+/g, ' ')
    .trim();
  return SHARED_JOINTS.has(joint) ? coordinatedStart(masked, ranges, prev) : undefined;
}

// Clauses before the claim's that are only more subjects of it ("T-1 and T-2 are resolved", "the email to Ana,
// the invoice and the refund went out"): no verb of their own, so the claim is theirs too. A word in -ed is
// taken for a verb ("Ana's refund failed and Bob's was delivered" makes two statements).
function coordinatedStart(masked: string, ranges: readonly ClauseRange[], r: number): number {
  let start = ranges[r]!.start;
  for (let prev = r - 1; prev >= 0; prev--) {
    const joint = masked.slice(ranges[prev]!.end, start).trim().toLowerCase();
    if (joint !== 'and' && joint !== ',' && joint !== ', and') break;
    // The blank between ", and" is a range of its own: it joins, it is no subject.
    if (masked.slice(ranges[prev]!.start, ranges[prev]!.end).trim() === '') continue;
    if (!nounsOnly(tokenize(masked, ranges[prev]!.start, ranges[prev]!.end), true)) break;
    start = ranges[prev]!.start;
  }
  return start;
}

// A short clause with no verb, pronoun, hedge or effect word of its own: only more objects or subjects of the
// clause next to it. `edIsVerb` takes a word in -ed for a verb (before a claim: "T-1 failed and T-2 is …").
function nounsOnly(tokens: Token[], edIsVerb: boolean): boolean {
  return (
    tokens.length <= MAX_OBJECT_WORDS &&
    tokens.every(
      (t, i) =>
        !FINITE.has(t.text) &&
        !FIRST_PERSON.has(t.text) &&
        !isHedge(t.text) &&
        !(edIsVerb && t.text.endsWith('ed')) &&
        matchEffect(tokens, i) === null,
    )
  );
}

/** True when any sentence of the text affirms that an effect happened. */
export function claimsCompletion(text: string): boolean {
  return splitSentences(text).some((s) => findClaims(s).length > 0);
}

// Verbs that name the same kind of effect, so "the ticket is closed" can be tied to
// `resolve_ticket` and "the refund was issued" to `refund_order`.
const SYNONYMS: readonly (readonly string[])[] = [
  'send deliver email mail notify message dispatch receive',
  'resolve fix close solve',
  'refund credit reimburse issue',
  'pay charge bill invoice capture',
  'create add open insert register issue book',
  'delete remove purge drop destroy erase archive',
  'cancel void revoke abort',
  'update change modify edit set patch apply save mark assign enable disable',
  'publish post release',
  'deploy release ship rollout install',
  'migrate move transfer import copy upload sync restore',
  'schedule book plan',
  'process handle run execute',
  'approve fulfill accept',
].map((group) => group.split(' '));

/** True when two words are the same word up to a short suffix ("email"/"emails", "migrate"/"migration"). */
export function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  const shorter = Math.min(a.length, b.length);
  let p = 0;
  while (p < shorter && a[p] === b[p]) p++;
  return p >= 4 && p >= shorter - 1 && a.length - p <= 4 && b.length - p <= 4;
}

/** True when a claim's verb stem names the same effect as an action-name token. */
export function stemMatches(stem: string, token: string): boolean {
  if (sameWord(stem, token)) return true;
  return SYNONYMS.some((group) => group.includes(stem) && group.some((w) => sameWord(w, token)));
}

const NOT_POSSESSIVE = new Set("it's that's there's what's here's let's everything's he's she's".split(' '));

/** True when a lower-cased word opens a noun phrase ("the", "your", "Ana's"), used to spot a named subject. */
export function isDeterminer(token: string): boolean {
  return DETERMINERS.has(token) || (token.endsWith("'s") && !NOT_POSSESSIVE.has(token));
}
