import { describe, expect, it } from 'vitest';
import { guardAnswer } from '../../src/messages/guard.js';
import { findClaims } from '../../src/messages/words.js';
import { helpdesk } from './fixtures.js';

// One clause of `n` claims, 26 characters each. Before the fix, one of 4 000 claims (100 000 characters) took about
// 18 s: quadratic in the clause length.
const clause = (n: number) => 'the email to ana was sent '.repeat(n);

// The fastest of five timings of `work` in ms: a loaded machine (or a collection of the garbage of the run before)
// slows some runs, never speeds one up.
function fastest(work: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    work();
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

// Four times the text takes four to seven times as long here (its garbage grows with it, up to 12 times in a busy
// test run), at least sixteen times when the work is quadratic (the code before took 100 times as long): the ratio
// tells them apart on a slow or busy machine, where a fixed time limit would not.
const LINEAR_BOUND = 15;

describe('guardAnswer: a long answer', () => {
  const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('verified')];

  it('finds the claims of one very long clause in linear time', () => {
    expect(findClaims(clause(4000))).toHaveLength(4000);
    const ratio = fastest(() => findClaims(clause(4000))) / fastest(() => findClaims(clause(1000)));
    expect(ratio).toBeLessThan(LINEAR_BOUND);
  });

  it('finds the claim after a long list of subjects in linear time', () => {
    // Each of the 2 000 clauses used to walk the whole list before looking for a claim of its own: 2.7 s.
    const subjects = (n: number) => `${'T-1 and '.repeat(n)}sent`;
    const [claim] = findClaims(subjects(2000));
    expect(claim?.word).toBe('sent');
    expect(claim?.clause).toBe(subjects(2000));
    const ratio = fastest(() => findClaims(subjects(8000))) / fastest(() => findClaims(subjects(2000)));
    expect(ratio).toBeLessThan(LINEAR_BOUND);
  });

  it('judges a single-clause answer in time linear in its length', () => {
    expect(guardAnswer(clause(4000), run).violations).toMatchObject([
      { kind: 'unverified_claim', claim: 'sent', operationId: 'op_1' },
    ]);
    const ratio =
      fastest(() => guardAnswer(clause(4000), run)) / fastest(() => guardAnswer(clause(1000), run));
    expect(ratio).toBeLessThan(LINEAR_BOUND);
  });
});
