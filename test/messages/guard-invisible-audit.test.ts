import { describe, expect, it } from 'vitest';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { claimsCompletion, splitSentences } from '../../src/messages/words.js';
import { helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}:${v.operationId ?? ''}`);

describe('guardAnswer: invisible characters inside words', () => {
  const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('failed')];

  it('refuses a claim word split by a zero-width or format character', () => {
    for (const [text, word, op] of [
      ['The email was sen\u200bt.', 'sent', 'op_1'],
      ['The email was deliv\u00adered.', 'delivered', 'op_1'],
      ['T-104 is reso\u200dlved.', 'resolved', 'op_t104'],
      ['The email to Ana was s\u2060e\ufeffnt.', 'sent', 'op_1'],
      ['The ticket is clo\u200csed\u200e.', 'closed', 'op_t104'],
    ] as const) {
      expect(kinds(guardAnswer(text, run).violations), JSON.stringify(text)).toEqual([
        `unverified_claim:${word}:${op}`,
      ]);
    }
    expect(claimsCompletion('D\u200bone.')).toBe(true);
  });

  it('reports the sentence as a reader sees it', () => {
    expect(guardAnswer('The email was sen\u200bt.', run).violations[0]?.sentence).toBe('The email was sent.');
    expect(splitSentences('Sen\u200bt. Do\u00adne.')).toEqual(['Sent.', 'Done.']);
  });

  it('passes an honest sentence whose negation an invisible character split', () => {
    for (const text of [
      'The email was n\u200bot sent.',
      'The email is queued, not sent y\u00adet.',
      'I could not con\u200bfirm it was delivered.',
      'No\u200bthing was sent.',
    ]) {
      expect(guardAnswer(text, run), JSON.stringify(text)).toEqual({ ok: true, violations: [] });
    }
  });
});
