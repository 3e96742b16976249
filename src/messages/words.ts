/**
 * The vocabulary of completion: which words claim that an effect happened, which words take
 * that claim back, and how text is cut into sentences and clauses before it is judged.
 *
 * Everything here is deterministic on purpose: the guard must give the same verdict for the
 * same text every time, so it can sit in a test suite and in a production output filter.
 */

import { foldLookalikes, foldStyled, stripInvisible } from './letters.js';

export { foldLookalikes, stripInvisible } from './letters.js';

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

interface EffectWord {
  stem: string;
  generic?: boolean;
  idiom?: boolean;
  /** Said of what the speaker got ("I received your request"), the word reports no effect of the run. */
  notBySpeaker?: boolean;
  /** Says the thing is in transit ("on its way"): that the request went out, not that it arrived. */
  inTransit?: boolean;
  /** The phrase claims only after a copula: "the email is on its way", not "it got lost on the way". */
  afterCopula?: boolean;
}

// Past forms and adjectives only: "send" or "resolve" promise nothing, "sent" or "resolved" do.
const WORDS: Record<string, EffectWord> = {
  done: { stem: 'do', generic: true },
  complete: { stem: 'complete', generic: true },
  completed: { stem: 'complete', generic: true },
  finished: { stem: 'finish', generic: true },
  finalized: { stem: 'finalize', generic: true },
  accomplished: { stem: 'accomplish', generic: true },
  handled: { stem: 'handle', generic: true },
  processed: { stem: 'process', generic: true },
  dispatched: { stem: 'dispatch' },
  succeeded: { stem: 'succeed', generic: true },
  successful: { stem: 'succeed', generic: true },
  successfully: { stem: 'succeed', generic: true },
  confirmed: { stem: 'confirm', generic: true },
  sent: { stem: 'send' },
  resent: { stem: 'send' },
  delivered: { stem: 'deliver' },
  emailed: { stem: 'email' },
  mailed: { stem: 'mail' },
  notified: { stem: 'notify' },
  paged: { stem: 'page' },
  alerted: { stem: 'alert' },
  messaged: { stem: 'message' },
  texted: { stem: 'text' },
  invited: { stem: 'invite' },
  submitted: { stem: 'submit' },
  placed: { stem: 'place' },
  ordered: { stem: 'order' },
  registered: { stem: 'register' },
  renewed: { stem: 'renew' },
  reset: { stem: 'reset' },
  replied: { stem: 'reply' },
  escalated: { stem: 'escalate' },
  triggered: { stem: 'trigger' },
  updated: { stem: 'update' },
  changed: { stem: 'change' },
  modified: { stem: 'modify' },
  edited: { stem: 'edit' },
  resolved: { stem: 'resolve' },
  fixed: { stem: 'fix' },
  closed: { stem: 'close' },
  created: { stem: 'create' },
  added: { stem: 'add' },
  deleted: { stem: 'delete' },
  removed: { stem: 'remove' },
  archived: { stem: 'archive' },
  refunded: { stem: 'refund' },
  credited: { stem: 'credit' },
  reimbursed: { stem: 'reimburse' },
  issued: { stem: 'issue' },
  charged: { stem: 'charge' },
  paid: { stem: 'pay' },
  scheduled: { stem: 'schedule' },
  rescheduled: { stem: 'schedule' },
  booked: { stem: 'book' },
  published: { stem: 'publish' },
  posted: { stem: 'post' },
  applied: { stem: 'apply' },
  saved: { stem: 'save' },
  cancelled: { stem: 'cancel' },
  canceled: { stem: 'cancel' },
  voided: { stem: 'void' },
  revoked: { stem: 'revoke' },
  merged: { stem: 'merge' },
  deployed: { stem: 'deploy' },
  shipped: { stem: 'ship' },
  migrated: { stem: 'migrate' },
  synced: { stem: 'sync' },
  synchronized: { stem: 'sync' },
  imported: { stem: 'import' },
  transferred: { stem: 'transfer' },
  uploaded: { stem: 'upload' },
  restored: { stem: 'restore' },
  approved: { stem: 'approve' },
  assigned: { stem: 'assign' },
  fulfilled: { stem: 'fulfill' },
  enabled: { stem: 'enable' },
  disabled: { stem: 'disable' },
  installed: { stem: 'install' },
  // What the other side got: "Ana has received the email", "the refund arrived". Idioms, so "the power
  // arrived" or "received a lot of praise" claim nothing; never the speaker's own ("we received your request").
  received: { stem: 'receive', idiom: true, notBySpeaker: true },
  arrived: { stem: 'receive', idiom: true, notBySpeaker: true },
};

const PHRASES: { words: string[]; effect: EffectWord }[] = [
  { words: ['all', 'set'], effect: { stem: 'complete', generic: true } },
  { words: ['taken', 'care', 'of'], effect: { stem: 'handle', generic: true } },
  { words: ['took', 'care', 'of'], effect: { stem: 'handle', generic: true } },
  { words: ['went', 'out'], effect: { stem: 'send', idiom: true } },
  { words: ['gone', 'out'], effect: { stem: 'send', idiom: true } },
  { words: ['went', 'through'], effect: { stem: 'succeed', generic: true } },
  { words: ['gone', 'through'], effect: { stem: 'succeed', generic: true } },
  { words: ['it', 'worked'], effect: { stem: 'succeed', generic: true } },
  { words: ['all', 'good'], effect: { stem: 'complete', generic: true } },
  // "The post is live" claims a publish; "the game is live" is about nothing the run did.
  { words: ['is', 'live'], effect: { stem: 'publish', idiom: true } },
  { words: ['are', 'live'], effect: { stem: 'publish', idiom: true } },
  { words: ['now', 'live'], effect: { stem: 'publish', idiom: true } },
  { words: ['went', 'live'], effect: { stem: 'publish', idiom: true } },
  { words: ['gone', 'live'], effect: { stem: 'publish', idiom: true } },
  // "The email is on its way" says it went out and has not arrived: what a polled pending send supports, and
  // false for a failed, unknown or unapproved one.
  { words: ['on', 'its', 'way'], effect: { stem: 'send', idiom: true, inTransit: true, afterCopula: true } },
  { words: ['on', 'the', 'way'], effect: { stem: 'send', idiom: true, inTransit: true, afterCopula: true } },
  {
    words: ['on', 'their', 'way'],
    effect: { stem: 'send', idiom: true, inTransit: true, afterCopula: true },
  },
  { words: ['en', 'route'], effect: { stem: 'send', idiom: true, inTransit: true, afterCopula: true } },
];

// What stands right before a state phrase: "is on its way", "it's en route", "are now on their way".
const COPULAS = new Set(['is', 'are', 'was', 'were', 'now', 'already', 'been', 'still']);
function afterCopula(token: string | undefined): boolean {
  return token !== undefined && (COPULAS.has(token) || token.endsWith("'s") || token.endsWith("'re"));
}

// Words that claim only when they are the whole clause: "Success!" does, "the success rate" does not.
const SOLO: Record<string, EffectWord> = {
  success: { stem: 'succeed', generic: true },
};

/** Every single effect word readback recognizes, for documentation and tests. */
export const EFFECT_WORDS: readonly string[] = Object.keys(WORDS);

// The plain forms of the effect words ("send", "refund"), which claim only after "able to" or "managed to".
const BASE_FORMS = new Map<string, EffectWord>(
  Object.values(WORDS).map((w) => [w.stem, { stem: w.stem, generic: w.generic }]),
);

// Words that, in the few words before an effect word, turn it into a negation, a hedge, a
// future, a condition or a wish: none of those asserts that the effect was observed.
const HEDGES = new Set(
  (
    'not never no nothing none nobody neither nor without cannot unable fail failed fails yet ' +
    'may might could would should will shall must can be being maybe perhaps possibly probably ' +
    'likely unlikely presumably supposedly reportedly apparently seemingly seems seem appears appear ' +
    'hopefully hope expect expected unconfirmed unverified unknown unclear uncertain pending awaiting ' +
    'waiting once until unless if whether when before need needs try tried trying attempt attempted ' +
    'attempting unsure'
  ).split(' '),
);
// Words that open a subordinate clause: everything after them up to the clause's end is a condition or
// a time still to come ("once the email to Ana is delivered"), however long its subject is.
const SUBORDINATORS = new Set(['once', 'until', 'unless', 'if', 'whether', 'when', 'whenever']);
// What someone asked for is not what happened: "you asked me to make sure the proposal is delivered".
// After "as" it affirms instead: "as you asked, I sent it", "as requested".
const REQUESTS = new Set(['ask', 'asked', 'asks', 'asking', 'requested', 'want', 'wants', 'wanted']);
// A clause that opens with one of these verbs is an instruction or a plan, not a report: "(please)
// confirm the email was delivered", "next step: verify the refund was issued", "make sure it is sent".
const IMPERATIVES = new Set(['confirm', 'verify', 'check', 'ensure']);
// Words of knowing and showing. A doubted one ("could not confirm", "no proof", "not sure", "waiting
// for confirmation") puts its whole complement in doubt: "... that the email to Ana was delivered".
const EVIDENTIAL = new Set(
  (
    'confirm confirms confirmed confirmation verify verifies verified verification know known sure certain ' +
    'proof proves evidence sign shows tell say see seen heard guarantee'
  ).split(' '),
);
const DOUBT = new Set(
  'not never no nothing none cannot unable without unsure unclear uncertain unknown unconfirmed unverified waiting awaiting'.split(
    ' ',
  ),
);
// "I can confirm it was sent" asserts; "can" only hedges a change ("it can be sent later").
const ASSERTING = new Set(['confirm', 'see', 'verify', 'tell', 'report', 'say']);
// "I'd already sent it" is "I had", not "I would": only adverbs stand between "'d" and the word.
const HAD_ADVERBS = new Set(['already', 'just', 'also', 'now', 'since', 'successfully', 'then']);
// "I was able to send", "managed to refund": an infinitive after these reports the act as achieved.
const ACHIEVED = new Set(['able', 'managed']);
// "I'll", "we'd": contracted modals hedge like their full forms.
const MODAL_CONTRACTIONS = ["'ll", "'d"];

const FIRST_PERSON = new Set(['i', 'we', "i've", "we've", "i'd", "we'd", "i'm", "we're"]);
// "I found it resolved", "we see T-104 is closed": the speaker observed a state, did not act.
const PERCEPTION = new Set(
  'found find see saw seen checked check noticed verified confirmed looked'.split(' '),
);
// These stems report an act of checking, not of changing, so they never count as agentive.
const OBSERVATION_STEMS = new Set(['confirm']);
// These words always report that something was done, even without a subject.
const ACT_WORDS = new Set(['done', 'succeeded', 'successfully', 'successful', 'accomplished', 'handled']);
const DETERMINERS = new Set([
  'the',
  'a',
  'an',
  'this',
  'that',
  'these',
  'those',
  'your',
  'my',
  'our',
  'their',
]);

/** True when a lower-cased token negates or hedges an effect word that follows it. */
export function isHedge(token: string): boolean {
  if (HEDGES.has(token) || token.endsWith("n't")) return true;
  return MODAL_CONTRACTIONS.some((c) => token.endsWith(c));
}

// Quoted and code spans are reported text (a postcondition, an error reason, an identifier),
// not the speaker's assertion; templates put every piece of free text in one of these.
const SPAN = /“[^”\n]*”|"[^"\n]*"|`[^`\n]*`/g;

/** Blanks out quoted (“…”, "…") and code (`…`) spans with spaces, keeping every offset. */
export function maskQuoted(text: string): string {
  return text.replace(SPAN, (m) => ' '.repeat(m.length));
}

const ABBREVIATIONS = new Set(['e.g', 'i.e', 'etc', 'vs', 'mr', 'mrs', 'ms', 'dr', 'approx']);

/**
 * Splits text into sentences at . ! ? and line breaks, never inside quoted or code spans; invisible format
 * characters are removed first, so the sentences are the text a reader sees.
 */
export function splitSentences(input: string): string[] {
  const text = stripInvisible(input);
  const masked = maskQuoted(text);
  const out: string[] = [];
  let start = 0;
  const boundary = /[.!?]+[)\]'’]*(?=\s|$)|\n+/g;
  for (let m = boundary.exec(masked); m !== null; m = boundary.exec(masked)) {
    if (m[0].startsWith('.') && m[0].length === 1) {
      const before = /([A-Za-z.]+)$/.exec(masked.slice(start, m.index))?.[1]?.toLowerCase();
      if (before !== undefined && ABBREVIATIONS.has(before)) continue;
    }
    const end = m.index + m[0].length;
    pushTrimmed(out, text.slice(start, m[0].startsWith('\n') ? m.index : end));
    start = end;
  }
  pushTrimmed(out, text.slice(start));
  return out;
}

function pushTrimmed(out: string[], piece: string): void {
  const trimmed = piece.replace(/^[\s\-*•]+/, '').trim();
  if (trimmed !== '') out.push(trimmed);
}

/** A clause as offsets into its sentence. */
export interface ClauseRange {
  start: number;
  end: number;
}

// Contrast and coordination usually separate statements about different effects
// ("the email was sent but delivery is pending"), so hedges never cross them.
// "So" and "then" join two statements too ("the email was not sent so I closed the ticket"), but not as "so far",
// "so that", "so was Bob's", nor a "then" or "so" that ends a condition ("if it is delivered then …").
const CLAUSE_BREAK =
  /[;()[\]—–]|[,:](?=\s|$)|\s-\s|\b(?:and|but|however|although|though|whereas|while|except|meanwhile|then|so(?!\s+(?:far|that|much|many|long|as|too|well|on|to|am|is|are|was|were|do|does|did|has|have|had|will|would|could|can)\b))\b/gi;
const CONDITION = /\b(?:if|once|when|whenever|unless|until|after|before)\b/i;

/** Cuts a sentence into clauses at punctuation and conjunctions, ignoring quoted spans. */
export function splitClauses(sentence: string): ClauseRange[] {
  const masked = maskQuoted(sentence);
  const out: ClauseRange[] = [];
  let start = 0;
  for (let m = CLAUSE_BREAK.exec(masked); m !== null; m = CLAUSE_BREAK.exec(masked)) {
    const word = m[0].toLowerCase();
    if ((word === 'so' || word === 'then') && CONDITION.test(masked.slice(start, m.index))) continue;
    if (m.index > start) out.push({ start, end: m.index });
    start = m.index + m[0].length;
  }
  if (start < masked.length) out.push({ start, end: masked.length });
  return out;
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
