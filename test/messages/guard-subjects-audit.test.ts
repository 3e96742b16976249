// "T-1 and T-2 are resolved." names two subjects for one claim. The sentence was cut at "and", so the claim
// covered T-2 alone and passed while T-1 had failed; "T-2 and T-1 are resolved." was caught. Coordinated
// subjects share the claim; a clause with a verb of its own ("T-1 failed and …") stays a statement apart.
import { describe, expect, it } from 'vitest';
import type { Status } from '../../src/contract/types.js';
import { guardAnswer } from '../../src/messages/guard.js';
import { completion } from './fixtures.js';

const ticket = (id: string, status: Status) =>
  completion({ status, target: `ticket:${id}`, operationId: `op_${id}`, postcondition: `${id} is resolved` });
const refund = (order: string, status: Status) =>
  completion({
    status,
    action: 'refund_order',
    target: `order:${order}`,
    operationId: `op_refund_${order}`,
    postcondition: `order ${order} is refunded`,
  });

describe('the guard and coordinated subjects', () => {
  const mixed = [ticket('T-1', 'failed'), ticket('T-2', 'verified')];

  it('refuses a claim about two subjects when the first one failed', () => {
    for (const answer of [
      'T-1 and T-2 are resolved.',
      'Tickets T-1 and T-2 were resolved.',
      'T-2 and T-1 are resolved.',
    ]) {
      const result = guardAnswer(answer, mixed);
      expect(result.ok, answer).toBe(false);
      expect(
        result.violations.map((v) => v.operationId),
        answer,
      ).toContain('op_T-1');
      expect(
        result.violations.map((v) => v.operationId),
        answer,
      ).not.toContain('op_T-2');
    }
    const orders = [refund('42', 'failed'), refund('43', 'verified')];
    expect(guardAnswer('Orders 42 and 43 were refunded.', orders).ok).toBe(false);
    expect(guardAnswer('The refunds for 42, 43 were issued.', orders).ok).toBe(false);
  });

  it('passes the same sentence when every subject verified', () => {
    const both = [ticket('T-1', 'verified'), ticket('T-2', 'verified')];
    expect(guardAnswer('T-1 and T-2 are resolved.', both)).toMatchObject({ ok: true });
  });

  it('keeps a clause with its own verb apart, so honest reports still pass', () => {
    for (const answer of [
      'T-1 failed and T-2 is resolved.',
      'T-1 could not be updated, and T-2 is resolved.',
      'T-1 is still open and T-2 is resolved.',
    ]) {
      expect(guardAnswer(answer, mixed).ok, answer).toBe(true);
    }
  });
});
