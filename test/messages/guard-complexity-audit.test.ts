import { describe, expect, it } from 'vitest';
import type { Completion } from '../../src/contract/types.js';
import { guardAnswer } from '../../src/messages/guard.js';
import { completion } from './fixtures.js';

// A run of n calls (emails and refunds, a third pending) and an answer of n sentences, each naming its target.
function runOf(n: number): Completion[] {
  return Array.from({ length: n }, (_, i) =>
    completion({
      status: i % 3 === 0 ? 'pending' : 'verified',
      action: i % 2 ? 'send_email' : 'refund_order',
      target: i % 2 ? `email:user${i}@example.com` : `order:${1000 + i}`,
      operationId: `op_${i}`,
      nextAllowedAction: i % 3 === 0 ? 'poll' : 'none',
    }),
  );
}
function answerOf(n: number): string {
  return Array.from({ length: n }, (_, i) =>
    i % 2
      ? `The email to user${i}@example.com was sent, so you are all set.`
      : `Order ${1000 + i} was refunded and the customer has received it.`,
  ).join(' ');
}

function fastest(text: string, run: Completion[]): number {
  let best = Number.POSITIVE_INFINITY;
  for (let k = 0; k < 3; k++) {
    const start = performance.now();
    guardAnswer(text, run);
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

describe('guardAnswer: cost grows with the answer and the run, not their product', () => {
  it('judges every sentence against its own completion', () => {
    const r = guardAnswer(answerOf(500), runOf(500));
    // Exactly the pending ones are refused, each once per claim word of its sentence.
    const pending = runOf(500).filter((c) => c.status === 'pending');
    expect(new Set(r.violations.map((v) => v.operationId))).toEqual(
      new Set(pending.map((c) => c.operationId)),
    );
  });

  it('takes well under 100 times as long for 10 times the sentences and completions', () => {
    const [small, large] = [100, 1000].map((n) => ({ text: answerOf(n), run: runOf(n) }));
    fastest(small!.text, small!.run); // warm-up
    const ratio = fastest(large!.text, large!.run) / Math.max(fastest(small!.text, small!.run), 1);
    // Linear work gives about 10; the former sentence × completion scan gave about 70.
    expect(ratio).toBeLessThan(35);
  });
});
