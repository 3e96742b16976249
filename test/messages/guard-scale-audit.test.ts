import { describe, expect, it } from 'vitest';
import { guardAnswer } from '../../src/messages/guard.js';
import { findClaims } from '../../src/messages/words.js';
import { helpdesk } from './fixtures.js';

describe('guardAnswer: a long answer', () => {
  // One clause of 100 000 characters with 4 000 claims took about 18 s (quadratic in the clause length).
  const text = 'the email to ana was sent '.repeat(4000);

  it('finds the claims of one very long clause in linear time', () => {
    const start = performance.now();
    expect(findClaims(text)).toHaveLength(4000);
    expect(performance.now() - start).toBeLessThan(1500);
  });

  it('judges a 100 000-character single-clause answer in well under the time of a model call', () => {
    const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('verified')];
    const start = performance.now();
    const r = guardAnswer(text, run);
    expect(performance.now() - start).toBeLessThan(3000);
    expect(r.violations).toMatchObject([{ kind: 'unverified_claim', claim: 'sent', operationId: 'op_1' }]);
  });
});
