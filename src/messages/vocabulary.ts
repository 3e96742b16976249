/**
 * The words of completion: which words claim that an effect happened (past forms, state phrases), and which words
 * around them take the claim back (hedges, negations, requests, doubt). `words.ts` applies them to sentences.
 */

export interface EffectWord {
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
export const WORDS: Record<string, EffectWord> = {
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

export const PHRASES: { words: string[]; effect: EffectWord }[] = [
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
export function afterCopula(token: string | undefined): boolean {
  return token !== undefined && (COPULAS.has(token) || token.endsWith("'s") || token.endsWith("'re"));
}

// Words that claim only when they are the whole clause: "Success!" does, "the success rate" does not.
export const SOLO: Record<string, EffectWord> = {
  success: { stem: 'succeed', generic: true },
};

/** Every single effect word readback recognizes, for documentation and tests. */
export const EFFECT_WORDS: readonly string[] = Object.keys(WORDS);

// The plain forms of the effect words ("send", "refund"), which claim only after "able to" or "managed to".
export const BASE_FORMS = new Map<string, EffectWord>(
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
export const SUBORDINATORS = new Set(['once', 'until', 'unless', 'if', 'whether', 'when', 'whenever']);
// What someone asked for is not what happened: "you asked me to make sure the proposal is delivered".
// After "as" it affirms instead: "as you asked, I sent it", "as requested".
export const REQUESTS = new Set(['ask', 'asked', 'asks', 'asking', 'requested', 'want', 'wants', 'wanted']);
// A clause that opens with one of these verbs is an instruction or a plan, not a report: "(please)
// confirm the email was delivered", "next step: verify the refund was issued", "make sure it is sent".
export const IMPERATIVES = new Set(['confirm', 'verify', 'check', 'ensure']);
// Words of knowing and showing. A doubted one ("could not confirm", "no proof", "not sure", "waiting
// for confirmation") puts its whole complement in doubt: "... that the email to Ana was delivered".
export const EVIDENTIAL = new Set(
  (
    'confirm confirms confirmed confirmation verify verifies verified verification know known sure certain ' +
    'proof proves evidence sign shows tell say see seen heard guarantee'
  ).split(' '),
);
export const DOUBT = new Set(
  'not never no nothing none cannot unable without unsure unclear uncertain unknown unconfirmed unverified waiting awaiting'.split(
    ' ',
  ),
);
// "I can confirm it was sent" asserts; "can" only hedges a change ("it can be sent later").
export const ASSERTING = new Set(['confirm', 'see', 'verify', 'tell', 'report', 'say']);
// "I'd already sent it" is "I had", not "I would": only adverbs stand between "'d" and the word.
export const HAD_ADVERBS = new Set(['already', 'just', 'also', 'now', 'since', 'successfully', 'then']);
// "I was able to send", "managed to refund": an infinitive after these reports the act as achieved.
export const ACHIEVED = new Set(['able', 'managed']);
// "I'll", "we'd": contracted modals hedge like their full forms.
const MODAL_CONTRACTIONS = ["'ll", "'d"];

export const FIRST_PERSON = new Set(['i', 'we', "i've", "we've", "i'd", "we'd", "i'm", "we're"]);
// "I found it resolved", "we see T-104 is closed": the speaker observed a state, did not act.
export const PERCEPTION = new Set(
  'found find see saw seen checked check noticed verified confirmed looked'.split(' '),
);
// These stems report an act of checking, not of changing, so they never count as agentive.
export const OBSERVATION_STEMS = new Set(['confirm']);
// These words always report that something was done, even without a subject.
export const ACT_WORDS = new Set([
  'done',
  'succeeded',
  'successfully',
  'successful',
  'accomplished',
  'handled',
]);
export const DETERMINERS = new Set([
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
