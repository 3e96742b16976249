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
 * subject of their whole sentence ("Done — T-104 is resolved"). Idioms ("went out") count only
 * when the clause names the target or a noun of the action. A completion is not the subject of a
 * claim whose clause names another target of its kind ("order 43", "bob@x.com") and none of its
 * own: that claim is about something no action in the run touched. The completions are indexed once per answer
 * (by identifier, and by action for the word scores), so the cost grows with the answer plus the run, not their
 * product.
 *
 * Judgement of an attributed claim: `verified` allows any claim; `no_op` allows a claim that a
 * state holds ("T-104 is resolved", "was already resolved") but not one that reports an act
 * ("I resolved T-104", "Done"), since nothing was done; `partial` allows a claim whose clause
 * states the passed count, without "all" or "every", in a sentence that also gives the total, the
 * failed count or a failed unit ("8 of 10 records migrated", "I updated 3 invoices; 2 failed");
 * every other status refuses it. A shadow completion (`completion.shadow` set) is an operator
 * observation, never proof: it supports no claim.
 */
import type { Completion, Status } from '../contract/types.js';
import { readAsLatin } from './letters.js';
import {
  type EffectClaim,
  findClaims,
  isDeterminer,
  maskQuoted,
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
  /** Target kind words ("order" for `order:42`), which introduce references to other targets. */
  kinds: string[];
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

// `lower` is `text.toLowerCase()`, passed in by callers that test one text against many ids.
function containsId(text: string, id: string, lower = text.toLowerCase()): boolean {
  if (id.trim() === '') return false;
  // Most ids are not in the text at all: a plain search first, so a run of many calls compiles few patterns.
  if (!lower.includes(id.toLowerCase())) return false;
  // Whole token: "T-104" must not match inside "T-1045", "42" not inside "op_42" or "4.2".
  return new RegExp(`(?<![\\w@.-])${escapeRegExp(id)}(?![\\w@-]|\\.\\w)`, 'i').test(text);
}

function profile(completion: Completion): Profile {
  const target = String(completion.target ?? '');
  const colon = target.indexOf(':');
  const actionTokens = wordsOf(String(completion.action ?? ''));
  const kind = colon > 0 ? wordsOf(target.slice(0, colon)) : [];
  return { completion, ids: targetIds(target), actionTokens, nouns: [...actionTokens, ...kind], kinds: kind };
}

const ADDRESS = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;

const UNITS = '(?:second|minute|hour|day|week|month|year|time|item|unit|percent)s?\\b';

// "T-104" → "a-9": letters and digits collapsed, separators kept.
function shapeOf(id: string): string {
  return id
    .toLowerCase()
    .replace(/[a-z]+/g, 'a')
    .replace(/\d+/g, '9');
}

interface Reference {
  id: string;
  named: string;
}

// Only identifiers shaped like the completion's own ("43" for `order:42`, "T-105" for `ticket:T-104`),
// so "the email 2 days ago" or "order at 10:00" name no target.
function shapesOf(p: Profile): Set<string> {
  return new Set(p.ids.filter((id) => /\d/.test(id)).map(shapeOf));
}

// What `references` depends on: completions alike in it share one scan of the clause.
function referenceKey(p: Profile): string {
  return `${p.kinds.join(' ')}|${[...shapesOf(p)].sort().join(' ')}|${p.ids.some((id) => id.includes('@'))}`;
}

/** Every target reference in the clause of the completion's kind and shape (its own included). */
function references(clause: string, p: Profile): Reference[] {
  const text = maskQuoted(clause);
  const refs: Reference[] = [];
  const shapes = shapesOf(p);
  for (const kind of shapes.size === 0 ? [] : p.kinds) {
    const noun = escapeRegExp(kind.replace(/s$/, ''));
    // A kind noun followed by an identifier with a digit: "order 43", "ticket #T-105", "invoice no. 7".
    // A unit after the number makes it a quantity, not an identifier: "the order 2 hours ago".
    const pattern = new RegExp(
      `\\b${noun}s?\\s*(?:#|no\\.\\s*|number\\s+)?([a-z]{0,8}[-_]?\\d[\\w-]*)(?![\\w-])(?!\\s+${UNITS})`,
      'gi',
    );
    for (const m of text.matchAll(pattern)) {
      if (shapes.has(shapeOf(m[1]!)))
        refs.push({ id: m[1]!, named: clause.slice(m.index, m.index + m[0].length) });
    }
  }
  if (p.ids.some((id) => id.includes('@'))) {
    for (const m of text.matchAll(ADDRESS)) refs.push({ id: m[0], named: m[0] });
  }
  return refs;
}

/** The first of the references that is not the completion's own target. */
function foreignOf(refs: readonly Reference[], p: Profile): string | undefined {
  return refs.find((ref) => !p.ids.some((id) => id.toLowerCase() === ref.id.toLowerCase()))?.named;
}

interface Scanned {
  text: string;
  lower: string;
  words: string[];
}

function scan(text: string): Scanned {
  return { text, lower: text.toLowerCase(), words: wordsOf(text) };
}

/** Completions that score alike on words: the same action and target-kind words. */
interface Group {
  actionTokens: string[];
  nouns: string[];
  members: Profile[];
}

/**
 * The run's completions indexed once per answer, so a claim costs the identifiers its clause contains and the
 * distinct kinds of action, not a pass over every completion: the guard stays linear in answer and run size.
 */
interface Index {
  groups: Group[];
  /** Lower-cased target identifiers and operation ids without whitespace, to the completions they belong to. */
  byId: Map<string, Profile[]>;
  byOperation: Map<string, Profile[]>;
  /** The longest of those keys: no longer span of a clause can name one. */
  longest: number;
  /** Completions with an identifier containing whitespace, which are searched for one by one. */
  spaced: Profile[];
  /** Each completion's place in the run. */
  order: Map<Profile, number>;
}

function indexOf(profiles: readonly Profile[]): Index {
  const groups = new Map<string, Group>();
  const byId = new Map<string, Profile[]>();
  const byOperation = new Map<string, Profile[]>();
  const spaced: Profile[] = [];
  let longest = 0;
  const put = (map: Map<string, Profile[]>, key: string, p: Profile): void => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [p]);
    else if (list.at(-1) !== p) list.push(p);
    longest = Math.max(longest, key.length);
  };
  for (const p of profiles) {
    const key = `${p.actionTokens.join(' ')}|${p.nouns.join(' ')}`;
    let group = groups.get(key);
    if (group === undefined) {
      group = { actionTokens: p.actionTokens, nouns: p.nouns, members: [] };
      groups.set(key, group);
    }
    group.members.push(p);
    const op = String(p.completion.operationId ?? '');
    if ([op, ...p.ids].some((id) => /\s/.test(id))) spaced.push(p);
    if (op.trim() !== '' && !/\s/.test(op)) put(byOperation, op.toLowerCase(), p);
    for (const id of p.ids) if (id.trim() !== '' && !/\s/.test(id)) put(byId, id.toLowerCase(), p);
  }
  const order = new Map(profiles.map((p, i) => [p, i]));
  return { groups: [...groups.values()], byId, byOperation, longest, spaced, order };
}

const TOKEN_CHAR = /[\w@.-]/;

// Every span of the text that `containsId` could match as a whole token, up to `longest` characters: it starts
// after a character that is not part of an identifier and ends before one (a "." ends it unless a word follows).
function* idSpans(lower: string, longest: number): Generator<string> {
  for (const chunk of lower.matchAll(/\S+/g)) {
    const word = chunk[0];
    const before = chunk.index > 0 ? lower[chunk.index - 1]! : ' ';
    for (let a = 0; a < word.length; a++) {
      if (!TOKEN_CHAR.test(a === 0 ? before : word[a - 1]!)) {
        for (let b = a + 1; b <= Math.min(word.length, a + longest); b++) {
          const next = word[b];
          const ends =
            next === undefined || (!/[\w@-]/.test(next) && !(next === '.' && /\w/.test(word[b + 1] ?? '')));
          if (ends) yield word.slice(a, b);
        }
      }
    }
  }
}

// The text is scanned once per claim rather than once per completion.
function best(claim: EffectClaim, index: Index, scanned: Scanned, withStem: boolean): Profile[] {
  const { text, lower, words } = scanned;
  const wordScore = (g: { actionTokens: string[]; nouns: string[] }): number =>
    (withStem && g.actionTokens.some((t) => stemMatches(claim.stem, t)) ? 4 : 0) +
    (words.some((w) => g.nouns.some((n) => sameWord(w, n))) ? 1 : 0);
  // Identifier scores, only for the completions whose identifiers the text contains.
  const named = new Map<Profile, number>();
  const bump = (p: Profile, by: number, id: string): void => {
    if (containsId(text, id, lower)) named.set(p, (named.get(p) ?? 0) + by);
  };
  const seenOp = new Set<Profile>();
  const seenId = new Set<Profile>();
  for (const span of idSpans(lower, index.longest)) {
    for (const p of index.byOperation.get(span) ?? []) {
      if (!seenOp.has(p)) {
        seenOp.add(p);
        bump(p, 10, String(p.completion.operationId));
      }
    }
    for (const p of index.byId.get(span) ?? []) {
      if (!seenId.has(p) && p.ids.some((id) => id.toLowerCase() === span && containsId(text, id, lower))) {
        seenId.add(p);
        named.set(p, (named.get(p) ?? 0) + 3);
      }
    }
  }
  for (const p of index.spaced) {
    if (!seenOp.has(p)) bump(p, 10, String(p.completion.operationId ?? ''));
    if (!seenId.has(p) && p.ids.some((id) => containsId(text, id, lower))) {
      named.set(p, (named.get(p) ?? 0) + 3);
    }
  }
  // A loop, not Math.max(...spread): a run of a hundred thousand calls would overflow the stack.
  let top = 0;
  const groupScores = index.groups.map((g) => {
    const s = wordScore(g);
    if (s > top) top = s;
    return s;
  });
  for (const [p, s] of named) {
    const total = s + wordScore(p);
    named.set(p, total);
    if (total > top) top = total;
  }
  if (top === 0) return [];
  const out: Profile[] = [];
  index.groups.forEach((g, i) => {
    if (groupScores[i] === top) for (const p of g.members) if (!named.has(p)) out.push(p);
  });
  for (const [p, s] of named) if (s === top) out.push(p);
  // Completion order, as the run listed them, keeps violations in a stable order.
  return out.length > 1 ? out.sort((a, b) => index.order.get(a)! - index.order.get(b)!) : out;
}

interface Attribution {
  matched: Profile[];
  /** A target the clause names that no attributed completion has ("order 43"). */
  foreign?: string;
}

function attribute(claim: EffectClaim, sentence: string, index: Index): Attribution {
  // An idiom's verb is not evidence of which action it means, so it gets no verb-stem score.
  const clause = scan(claim.clause);
  let matched = best(claim, index, clause, !claim.idiom);
  if (matched.length === 0 && claim.generic) matched = best(claim, index, scan(sentence), false);
  let foreign: string | undefined;
  const refs = new Map<string, Reference[]>();
  const own = matched.filter((p) => {
    const key = referenceKey(p);
    const found = refs.get(key) ?? references(claim.clause, p);
    refs.set(key, found);
    const ref = foreignOf(found, p);
    if (ref === undefined || p.ids.some((id) => containsId(claim.clause, id, clause.lower))) return true;
    foreign ??= ref;
    return false;
  });
  return { matched: own, ...(own.length === 0 && foreign !== undefined ? { foreign } : {}) };
}

function hasSubject(clause: string): boolean {
  const tokens = readAsLatin(clause).replace(/’/g, "'").toLowerCase().split(/\s+/);
  return tokens.some((t, i) => {
    if (/[\d@#]/.test(t)) return true;
    const next = (tokens[i + 1] ?? '').replace(/[^a-z'-]/g, '');
    return (
      isDeterminer(t.replace(/[^a-z']/g, '')) && next.length >= 3 && !STOPWORDS.has(next) && !VAGUE.has(next)
    );
  });
}

const NUMBER_WORDS = (
  'zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen ' +
  'seventeen eighteen nineteen twenty'
).split(' ');
// A claim about every unit is false for a partial completion, whatever counts stand next to it.
const UNIVERSAL = /\b(?:all|every|each|both|entire|whole|everything)\b/i;

// A count as a whole token, in digits or as a word: "3" or "three", not the 3 in "INV-3" or "3.5".
function countPattern(n: number): RegExp {
  const word = NUMBER_WORDS[n];
  const alternatives = word === undefined ? `${n}` : `${n}|${word}`;
  return new RegExp(`(?<![\\w@.-])(?:${alternatives})(?![\\w@-]|\\.\\w)`, 'i');
}

function statesCounts(claim: EffectClaim, sentence: string, c: Completion): boolean {
  if (c.units === undefined || c.units === null) return false;
  const { passed, required, failed } = c.units;
  const clause = maskQuoted(claim.clause);
  if (UNIVERSAL.test(clause) || !countPattern(passed).test(clause)) return false;
  // The passed count alone ("I updated 3 invoices") hides the shortfall; the sentence must show it too.
  const rest = maskQuoted(sentence).replace(countPattern(passed), ' ');
  const failedTargets = Array.isArray(c.units.failedTargets) ? c.units.failedTargets : [];
  return (
    countPattern(required).test(rest) ||
    (failed > 0 && countPattern(failed).test(rest)) ||
    failedTargets.some((t) => containsId(rest, String(t)))
  );
}

function allowed(claim: EffectClaim, sentence: string, c: Completion): boolean {
  if (c.shadow !== undefined) return false;
  switch (c.status) {
    case 'verified':
      return true;
    case 'no_op':
      return !claim.agentive;
    case 'partial':
      return statesCounts(claim, sentence, c);
    case 'pending':
      // Sent and not yet verified: the request went out, its effect is still to be seen. A call waiting for
      // approval (`ask_user`) has sent nothing.
      return claim.aboutRequest && c.nextAllowedAction === 'poll';
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
  const index = indexOf(completions.map(profile));
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
    // Claims of one clause with the same kind of word attribute alike: a long clause is scanned once.
    let clauseOf = '';
    const cache = new Map<string, Attribution>();
    for (const claim of findClaims(sentence)) {
      if (claim.clause !== clauseOf) {
        clauseOf = claim.clause;
        cache.clear();
      }
      const key = `${claim.stem}|${claim.idiom}|${claim.generic}`;
      const { matched, foreign } = cache.get(key) ?? attribute(claim, sentence, index);
      cache.set(key, { matched, ...(foreign === undefined ? {} : { foreign }) });
      for (const p of matched) {
        if (!allowed(claim, sentence, p.completion)) add(unverified(sentence, claim, p.completion));
      }
      if (matched.length > 0) continue;
      if (foreign !== undefined) {
        add({
          kind: 'no_completion',
          sentence,
          claim: claim.word,
          detail: `"${claim.word}" claims an effect on "${foreign}", which no action in this run touched; report only the targets the actions ran on.`,
        });
        continue;
      }
      // "The power went out" is not about any action; only a named subject makes an idiom a claim.
      if (claim.idiom) continue;
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
