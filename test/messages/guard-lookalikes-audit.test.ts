import { describe, expect, it } from 'vitest';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { claimsCompletion, findClaims, foldLookalikes } from '../../src/messages/words.js';
import { helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}:${v.operationId ?? ''}`);

// Letters of other scripts that print like Latin ones; written as escapes so the test reads unambiguously.
const CYRILLIC_E = '\u0435';
const CYRILLIC_O = '\u043e';
const GREEK_O = '\u03bf';
const ARMENIAN_N = '\u0578';

describe('guardAnswer: letters of other scripts that look like Latin ones', () => {
  const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('failed')];

  it('refuses a claim word spelt with lookalike or fullwidth letters', () => {
    for (const [text, word, op] of [
      [`The email was s${CYRILLIC_E}nt.`, 'sent', 'op_1'],
      [`The email was d${CYRILLIC_E}liv${CYRILLIC_E}red.`, 'delivered', 'op_1'],
      [`T-104 is res${GREEK_O}lved.`, 'resolved', 'op_t104'],
      ['The ticket is \uff43\uff4c\uff4f\uff53\uff45\uff44.', 'closed', 'op_t104'],
      [`The email to Ana was se${ARMENIAN_N}t.`, 'sent', 'op_1'],
    ] as const) {
      expect(kinds(guardAnswer(text, run).violations), JSON.stringify(text)).toEqual([
        `unverified_claim:${word}:${op}`,
      ]);
    }
    expect(claimsCompletion(`D${CYRILLIC_O}ne.`)).toBe(true);
    expect(claimsCompletion(`\u0410ll s${CYRILLIC_E}t.`)).toBe(true);
  });

  it('reports the sentence as it was written, and the claim word as it reads', () => {
    const text = `The email was s${CYRILLIC_E}nt.`;
    const [violation] = guardAnswer(text, run).violations;
    expect(violation?.sentence).toBe(text);
    expect(violation?.claim).toBe('sent');
    // The clause keeps the writer's letters: ids and names in it are matched as written.
    expect(findClaims(text)[0]?.clause).toBe(text);
  });

  it('passes an honest sentence whose negation or hedge is spelt with lookalikes', () => {
    for (const text of [
      `The email was n${GREEK_O}t sent.`,
      `The email is queued, n${CYRILLIC_O}t sent yet.`,
      `I could not c${CYRILLIC_O}nfirm it was delivered.`,
    ]) {
      expect(guardAnswer(text, run), JSON.stringify(text)).toEqual({ ok: true, violations: [] });
    }
  });

  it('leaves text in those scripts alone: a Russian or Greek sentence claims nothing in English', () => {
    for (const text of ['Письмо отправлено.', 'Το email στάλθηκε.', 'Заказ Т-104 закрыт.']) {
      expect(claimsCompletion(text), text).toBe(false);
    }
  });

  it('folds one UTF-16 unit to one, so offsets into the text stay valid', () => {
    const text = `Ticket T-104: r${CYRILLIC_E}s${GREEK_O}lved, \uff53\uff45\uff4e\uff54 и ε kept.`;
    const folded = foldLookalikes(text);
    expect(folded).toBe('Ticket T-104: resolved, sent и ε kept.');
    expect(folded.length).toBe(text.length);
    expect(foldLookalikes('plain ASCII')).toBe('plain ASCII');
  });
});
