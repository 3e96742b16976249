import { describe, expect, it } from 'vitest';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { foldLookalikes, foldStyled, readAsLatin } from '../../src/messages/letters.js';
import { claimsCompletion, findClaims } from '../../src/messages/words.js';
import { helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}:${v.operationId ?? ''}`);

// Each word below is built from code points so the test says exactly which alphabet it uses.
const styled = (word: string, base: number, baseLower: number): string =>
  [...word]
    .map((c) =>
      c >= 'a' && c <= 'z'
        ? String.fromCodePoint(baseLower + c.charCodeAt(0) - 0x61)
        : String.fromCodePoint(base + c.charCodeAt(0) - 0x41),
    )
    .join('');
const bold = (w: string) => styled(w, 0x1d400, 0x1d41a);
const italic = (w: string) => styled(w, 0x1d434, 0x1d44e).replace('\u{1d455}', 'ℎ');
const sansBold = (w: string) => styled(w, 0x1d5d4, 0x1d5ee);
const monospace = (w: string) => styled(w, 0x1d670, 0x1d68a);
const negativeSquared = (w: string) => styled(w.toUpperCase(), 0x1f170, 0x1f170);
const circled = (w: string) =>
  [...w].map((c) => String.fromCharCode(0x24d0 + c.charCodeAt(0) - 0x61)).join('');
const SMALL_CAPS: Record<string, string> = {
  d: '\u1d05',
  o: '\u1d0f',
  n: '\u0274',
  e: '\u1d07',
  s: '\ua731',
  t: '\u1d1b',
};
const smallCaps = (w: string) => [...w].map((c) => SMALL_CAPS[c] ?? c).join('');

describe('guardAnswer: words written in styled letters', () => {
  const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('failed')];

  it('refuses a claim whose word is set in bold, italic, sans-serif, monospace or negative squared letters', () => {
    for (const [word, expected] of [
      [bold('sent'), 'sent'],
      [italic('sent'), 'sent'],
      [sansBold('delivered'), 'delivered'],
      [monospace('sent'), 'sent'],
      [negativeSquared('sent'), 'sent'],
      [circled('sent'), 'sent'],
      [smallCaps('sent'), 'sent'],
    ] as const) {
      const text = `The email to Ana was ${word}.`;
      expect(kinds(guardAnswer(text, run).violations), JSON.stringify(text)).toEqual([
        `unverified_claim:${expected}:op_1`,
      ]);
    }
  });

  it('reads a bare styled "done" as the generic claim it is', () => {
    for (const word of [bold('Done'), italic('done'), smallCaps('done'), `${bold('All')} ${bold('set')}`]) {
      expect(claimsCompletion(`${word}.`), word).toBe(true);
      expect(guardAnswer(`${word}!`, run).ok, word).toBe(false);
    }
  });

  it('passes honest sentences whose hedges are styled, and styled text that claims nothing', () => {
    for (const text of [
      `The email was ${bold('not')} sent.`,
      `The email is ${italic('queued')}, not sent yet.`,
      `${bold('Pending')}: the email to Ana is queued.`,
    ]) {
      expect(guardAnswer(text, run), JSON.stringify(text)).toEqual({ ok: true, violations: [] });
    }
  });

  it('reports the sentence and clause in the writer’s own characters, with offsets into that sentence', () => {
    const text = `The ${bold('ticket')} T-104 is ${bold('resolved')}, and the email was sent.`;
    const claims = findClaims(text);
    // The same claims, clauses and offsets as the plain sentence gives, mapped onto the styled one.
    const plain = findClaims('The ticket T-104 is resolved, and the email was sent.');
    expect(claims.map((c) => c.word)).toEqual(plain.map((c) => c.word));
    const [resolved, sent] = claims;
    expect(text.slice(resolved!.index, resolved!.index + bold('resolved').length)).toBe(bold('resolved'));
    expect(text.slice(sent!.index, sent!.index + 4)).toBe('sent');
    expect(sent!.index - resolved!.index).toBe(plain[1]!.index - plain[0]!.index + 'resolved'.length);
    expect(resolved!.clause).toBe(`The ${bold('ticket')} T-104 is ${bold('resolved')}`);
    expect(sent!.clause).toBe(plain[1]!.clause);
    const [violation] = guardAnswer(text, run).violations;
    expect(violation?.sentence).toBe(text);
  });
});

describe('foldStyled and foldLookalikes', () => {
  it('writes styled letters plainly and maps every offset back', () => {
    const text = `a${bold('Hi')}b`;
    const folded = foldStyled(text);
    expect(folded.text).toBe('aHib');
    expect(folded.origin).toEqual([0, 1, 3, 5, 6]);
    expect(foldStyled('plain').origin).toBeUndefined();
  });

  it('leaves styled digits and unassigned code points as they are', () => {
    const digits = '\u{1d7ce}\u{1d7cf}';
    expect(foldStyled(`T-${digits}`)).toEqual({ text: `T-${digits}` });
    // U+1D455 is a hole in the italic alphabet (its letter is ℎ, U+210E).
    expect(foldStyled('\u{1d455}').text).toBe('\u{1d455}');
  });

  it('reads styled Greek through the Greek lookalikes, and keeps one unit for one in the BMP', () => {
    expect(readAsLatin('\u{1d6c2}')).toBe('a');
    const text = `ℎ${circled('ok')} ${smallCaps('done')} ᵈᵒⁿᵉ`;
    const folded = foldLookalikes(text);
    expect(folded).toBe('hok done done');
    expect(folded.length).toBe(text.length);
    // Symbols that map to more than one letter stay symbols.
    expect(foldLookalikes('℡ ⒜')).toBe('℡ ⒜');
  });
});
