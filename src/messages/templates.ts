/**
 * Status → message. The default templates are the only words a model is handed about an
 * effect, so they follow one rule: completion words appear only when the status is
 * `verified`. Every piece of free text (postcondition, reason, identifiers) is put in a
 * quoted or code span, which the claim finder treats as reported text, so a postcondition
 * such as "ticket is resolved" can be shown for a pending action without claiming it.
 */
import type { CompletionDraft, MessageTemplate, Status } from '../contract/types.js';
import { findClaims, splitSentences } from './words.js';

/** How many failed targets a partial message lists before it says "and N more". */
export const MAX_LISTED_TARGETS = 10;

// Control characters (\p{Cc} is exactly U+0000–U+001F and U+007F–U+009F) and line/paragraph separators.
// Spelled without the `u` flag, which makes the scan of every message part several times slower.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;
// Invisible format characters: bidirectional overrides reorder what a reader sees ("Trojan Source"), and
// zero-width ones hide inside words; neither belongs in a message.
const FORMAT = /[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
const QUOTES = /[`“”"]/g;

/** How many characters of one value (a reason, a postcondition, an identifier) a message shows. */
export const MAX_VALUE_LENGTH = 300;

// Any character `clean` changes or `code`/`quote` replace, and space at either end: one scan tells the usual
// identifier or sentence, which needs none of it, from the rare value that needs the full treatment.
const NEEDS_CLEANING =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff`“”"]|^\s|\s$/;

/** The value as text fit to show inside a code span or quotes: already clean, nothing to replace. */
function plainPart(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_VALUE_LENGTH && !NEEDS_CLEANING.test(value)
    ? value
    : undefined;
}

function clean(value: unknown): string {
  if (typeof value === 'string' && value.length <= MAX_VALUE_LENGTH && !NEEDS_CLEANING.test(value))
    return value;
  // Line breaks and control characters would split a message into sentences it never meant.
  const text = (typeof value === 'string' ? value : String(value ?? ''))
    .replace(CONTROL, ' ')
    .replace(FORMAT, '');
  const trimmed = text.trim();
  if (trimmed.length <= MAX_VALUE_LENGTH) return trimmed;
  // A whole error page or a megabyte of input would bury the status; cut it, never inside a surrogate pair.
  const cut = trimmed.slice(0, MAX_VALUE_LENGTH - 3);
  return `${/[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut}...`;
}

// A count from a hand-built or stored completion may be anything; only a number is shown bare.
function count(value: unknown): string {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : code(value, '?');
}

function code(value: unknown, fallback = 'unnamed'): string {
  const plain = plainPart(value);
  if (plain !== undefined && plain !== '') return `\`${plain}\``;
  const text = clean(value).replace(QUOTES, "'");
  return `\`${text === '' ? fallback : text}\``;
}

function quote(value: unknown): string {
  return `“${plainPart(value) ?? clean(value).replace(QUOTES, "'")}”`;
}

function listOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function list(items: readonly unknown[]): string {
  const shown = items.slice(0, MAX_LISTED_TARGETS).map((t) => code(t));
  const more = items.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}

function time(value: unknown): string {
  const text = clean(value);
  return /^[\w:.+-]+$/.test(text) ? text : code(text);
}

function failingChecks(draft: CompletionDraft): string {
  const names = (draft.checks ?? []).filter((c) => c && c.pass === false).map((c) => c.name);
  return names.length > 0 ? ` Checks that did not pass: ${list(names)}.` : '';
}

function because(draft: CompletionDraft): string {
  const parts: string[] = [];
  if (clean(draft.errorCode) !== '') parts.push(code(draft.errorCode));
  if (clean(draft.reason) !== '') parts.push(quote(draft.reason));
  return parts.join(', ');
}

function found(evidence: Record<string, unknown> | undefined): string {
  if (evidence === undefined || evidence === null || typeof evidence !== 'object') return '';
  const pairs = Object.entries(evidence).map(([k, v]) => {
    let shown: string;
    try {
      shown = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
    } catch {
      shown = String(v);
    }
    return `${k}=${shown}`;
  });
  if (pairs.length === 0) return '';
  const text = pairs.join(', ');
  return ` (found ${code(text.length > 200 ? `${text.slice(0, 197)}...` : text)})`;
}

const TEMPLATES: Record<Status, MessageTemplate> = {
  verified: (d) => {
    const holds = clean(d.postcondition) === '' ? '' : `; ${quote(d.postcondition)} holds`;
    const at = clean(d.observedAt) === '' ? '' : `, observed at ${time(d.observedAt)}`;
    return `Verified: ${code(d.action)} operation ${code(d.operationId)} completed on ${code(d.target)}${holds}${at}.`;
  },
  pending: (d) => {
    const what = clean(d.postcondition) === '' ? 'its effect' : quote(d.postcondition);
    return (
      `Pending: ${code(d.action)} on ${code(d.target)} was accepted and is not verified yet; ` +
      `${what} has not been observed. Operation ${code(d.operationId)} can be polled for the outcome.`
    );
  },
  failed: (d) => {
    const expected = clean(d.postcondition) === '' ? '' : ` ${quote(d.postcondition)} was not observed.`;
    const why = because(d);
    return (
      `Failed: ${code(d.action)} on ${code(d.target)} (operation ${code(d.operationId)}).` +
      `${why === '' ? '' : ` Reason: ${why}.`}${expected}${failingChecks(d)}`
    );
  },
  partial: (d) => {
    const head = `Partial: ${code(d.action)} on ${code(d.target)} (operation ${code(d.operationId)}):`;
    const u = d.units;
    if (u === undefined || u === null) {
      return `${head} some required conditions passed the readback and others did not.${failingChecks(d)}`;
    }
    const failedTargets = listOf(u.failedTargets);
    const which = failedTargets.length > 0 ? `; the failing units are ${list(failedTargets)}` : '';
    return `${head} ${count(u.passed)} of ${count(u.required)} units passed the readback and ${count(u.failed)} did not${which}.`;
  },
  no_op: (d) => {
    const state = clean(d.postcondition) === '' ? 'the requested state' : quote(d.postcondition);
    return (
      `No change needed: ${code(d.target)} already satisfied ${state}${found(d.evidence)}, ` +
      `so ${code(d.action)} made no change (operation ${code(d.operationId)}).`
    );
  },
  unknown: (d) => {
    const why = because(d);
    return (
      `Unknown: the outcome of ${code(d.action)} on ${code(d.target)} could not be determined` +
      `${why === '' ? '' : ` (${why})`}; it may or may not have taken effect. ` +
      `Operation ${code(d.operationId)} is kept for recovery; check it before trying again.`
    );
  },
};

/** The default message for a draft's status; it uses completion words only when the status is `verified`. */
export function defaultMessage(draft: CompletionDraft): string {
  const template = TEMPLATES[draft.status] ?? TEMPLATES.unknown;
  return template(draft);
}

/** A formed message, with the reason a user template was refused when the default had to be used. */
export interface FormedMessage {
  message: string;
  overrideRejected?: string;
}

function firstClaim(text: string): string | undefined {
  for (const sentence of splitSentences(text)) {
    const claim = findClaims(sentence)[0];
    if (claim !== undefined) return claim.word;
  }
  return undefined;
}

function copyOf(draft: CompletionDraft): CompletionDraft {
  try {
    return structuredClone(draft);
  } catch {
    // Evidence holding something uncloneable (a function): copy the parts the runtime itself builds.
    return {
      ...draft,
      checks: (draft.checks ?? []).map((c) => ({ ...c })),
      ...(draft.units
        ? {
            units: {
              ...draft.units,
              failedTargets: Array.isArray(draft.units.failedTargets) ? [...draft.units.failedTargets] : [],
            },
          }
        : {}),
    };
  }
}

/** Forms a message from a user override when it is safe, else from the default template. */
export function formMessage(
  draft: CompletionDraft,
  overrides?: Partial<Record<Status, MessageTemplate>>,
): FormedMessage {
  const template = overrides?.[draft.status];
  if (template === undefined) return { message: defaultMessage(draft) };
  const refuse = (why: string): FormedMessage => ({
    message: defaultMessage(draft),
    overrideRejected: `the ${draft.status} message override ${why}`,
  });
  if (typeof template !== 'function') return refuse('is not a function');
  let out: unknown;
  try {
    // A deep copy, so a template cannot change the completion it describes, not even its checks or units.
    out = template(copyOf(draft));
  } catch (error) {
    return refuse(`threw: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof out !== 'string') return refuse(`returned ${out === null ? 'null' : typeof out}, not a string`);
  if (out.trim() === '') return refuse('returned an empty message');
  if (draft.status !== 'verified') {
    // Only the runtime may say an effect happened; a template cannot promote a status by wording.
    const claim = firstClaim(out);
    if (claim !== undefined)
      return refuse(`claims completion ("${claim}") but the status is ${draft.status}`);
  }
  return { message: out };
}
