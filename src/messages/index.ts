/** The messages part: status templates, the claim finder, the final-answer guard and the summary. */
export { type GuardResult, guardAnswer, type Violation, type ViolationKind } from './guard.js';
export { SUMMARY_ORDER, summarize } from './summarize.js';
export { defaultMessage, type FormedMessage, formMessage, MAX_LISTED_TARGETS } from './templates.js';
export { claimsCompletion, EFFECT_WORDS, type EffectClaim, findClaims, splitSentences } from './words.js';
