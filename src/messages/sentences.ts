/**
 * How text is cut before it is judged: sentences at . ! ? and line breaks, clauses at punctuation and conjunctions,
 * with quoted and code spans (reported text, not the speaker's assertion) masked so they never split or claim.
 */
import { stripInvisible } from './letters.js';

// Quoted and code spans are reported text (a postcondition, an error reason, an identifier),
// not the speaker's assertion; templates put every piece of free text in one of these.
export const SPAN = /“[^”\n]*”|"[^"\n]*"|`[^`\n]*`/g;

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
