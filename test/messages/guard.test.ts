import { describe, expect, it } from 'vitest';
import type { Status } from '../../src/contract/types.js';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { completion, helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}`);

describe('guardAnswer: answers that agree with the evidence pass', () => {
  it('passes an honest helpdesk report of mixed outcomes', () => {
    const run = [
      helpdesk.resolveTicket('verified'),
      helpdesk.sendEmail('pending'),
      helpdesk.refundOrder('failed', { errorCode: 'card_declined' }),
      helpdesk.migrateBatch('partial'),
    ];
    const answer =
      'Ticket T-104 is resolved. I queued the email to Ana; delivery is not confirmed yet (operation op_1). ' +
      'The refund for order 42 failed: the card was declined. 8 of 10 records migrated; rec-3 and rec-7 did not.';
    expect(guardAnswer(answer, run)).toEqual({ ok: true, violations: [] });
  });

  it('passes the design example when the ticket is verified', () => {
    expect(guardAnswer('Done — T-104 is resolved.', [helpdesk.resolveTicket('verified')]).ok).toBe(true);
  });

  it('passes hedged, negated and questioned mentions of unverified effects', () => {
    const run = [helpdesk.sendEmail('unknown'), helpdesk.refundOrder('failed')];
    const answer =
      "The email to Ana may have been sent, but I can't confirm it: the mail API did not answer. " +
      'Order 42 was not refunded. Should I try the refund again?';
    expect(guardAnswer(answer, run).ok).toBe(true);
  });

  it('passes generic wrap-ups when every action is verified', () => {
    const run = [helpdesk.resolveTicket('verified'), helpdesk.sendEmail('verified')];
    expect(guardAnswer('All set, everything is complete.', run).ok).toBe(true);
    expect(guardAnswer('Done! I resolved T-104 and emailed ana@example.com.', run).ok).toBe(true);
  });

  it('passes text with no effect words at all', () => {
    expect(guardAnswer('I looked at the ticket and have a question for you.', []).ok).toBe(true);
  });
});

describe('guardAnswer: unverified_claim', () => {
  it('flags "Done, I sent it." for a pending email', () => {
    const r = guardAnswer('Done, I sent it.', [helpdesk.sendEmail('pending')]);
    expect(r.ok).toBe(false);
    expect(kinds(r.violations)).toEqual(['unattributed_claim:done', 'unverified_claim:sent']);
    expect(r.violations[1]).toMatchObject({
      kind: 'unverified_claim',
      sentence: 'Done, I sent it.',
      claim: 'sent',
      target: 'email:ana@example.com',
      action: 'send_email',
      status: 'pending',
      operationId: 'op_1',
    });
    expect(r.violations[1]?.detail).toContain('say it was accepted and is not verified yet');
  });

  it('flags the design example when the ticket is only pending', () => {
    const r = guardAnswer('Done — T-104 is resolved.', [helpdesk.resolveTicket('pending')]);
    expect(kinds(r.violations)).toEqual(['unverified_claim:done', 'unverified_claim:resolved']);
  });

  it('flags a claim that names the target of a failed action', () => {
    const r = guardAnswer('Order 42 has been refunded in full.', [helpdesk.refundOrder('failed')]);
    expect(r.violations).toMatchObject([{ kind: 'unverified_claim', claim: 'refunded', status: 'failed' }]);
  });

  it('flags "sent but pending": a hedge later in the sentence does not excuse the claim', () => {
    const r = guardAnswer('The email was sent but delivery is pending.', [helpdesk.sendEmail('pending')]);
    expect(kinds(r.violations)).toEqual(['unverified_claim:sent']);
  });

  it('ties synonyms and nouns to the action ("the ticket is closed" → resolve_ticket)', () => {
    const r = guardAnswer('The ticket is closed.', [helpdesk.resolveTicket('unknown')]);
    expect(r.violations).toMatchObject([
      { kind: 'unverified_claim', action: 'resolve_ticket', status: 'unknown' },
    ]);
  });

  it('attributes each claim of a compound sentence to its own action', () => {
    const run = [helpdesk.resolveTicket('verified'), helpdesk.sendEmail('pending')];
    const r = guardAnswer('I resolved T-104 and sent the proposal email to ana@example.com.', run);
    expect(r.violations).toMatchObject([{ kind: 'unverified_claim', claim: 'sent', action: 'send_email' }]);
  });

  it('uses the target to tell two runs of one action apart, and flags an ambiguous claim', () => {
    const run = [
      helpdesk.sendEmail('pending'),
      helpdesk.sendEmail('verified', { target: 'email:bob@example.com', operationId: 'op_2' }),
    ];
    expect(guardAnswer('The email to bob@example.com was delivered.', run).ok).toBe(true);
    expect(guardAnswer('The email to Ana was delivered.', run).violations).toMatchObject([
      { operationId: 'op_1' },
    ]);
    expect(guardAnswer('Both emails were delivered.', run).violations).toMatchObject([
      { operationId: 'op_1' },
    ]);
  });

  it('uses an operation id named in the clause', () => {
    const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('verified')];
    const r = guardAnswer('Operation op_1 completed.', run);
    expect(r.violations).toMatchObject([{ kind: 'unverified_claim', operationId: 'op_1' }]);
  });

  describe('partial', () => {
    const run = [helpdesk.migrateBatch('partial')];

    it('flags a claim that the whole batch migrated', () => {
      const r = guardAnswer('The batch 2025-q1 was migrated.', run);
      expect(r.violations).toMatchObject([{ kind: 'unverified_claim', status: 'partial' }]);
    });

    it('allows a claim that states the exact counts', () => {
      expect(guardAnswer('8 of 10 records were migrated.', run).ok).toBe(true);
      expect(guardAnswer('Migrated 8/10 records of the batch.', run).ok).toBe(true);
      expect(guardAnswer('9 of 10 records were migrated.', run).ok).toBe(false);
    });

    it.each([
      'Migrated 8 of the 10 records; rec-3 and rec-7 failed.',
      'Eight of ten records migrated.',
      'I migrated 8 records; 2 failed.',
      'I migrated 8 records, but rec-3 and rec-7 did not pass the readback.',
    ])('allows the passed count with the shortfall in the same sentence: %j', (answer) => {
      expect(guardAnswer(answer, run)).toEqual({ ok: true, violations: [] });
    });

    it.each([
      'I migrated 8 records.',
      'I migrated all 8 records; 2 failed.',
      'All records were migrated.',
    ])('flags %j: a passed count that hides the shortfall, or a claim about every unit', (answer) => {
      expect(guardAnswer(answer, run).violations).toMatchObject([
        { kind: 'unverified_claim', status: 'partial' },
      ]);
    });
  });

  describe('no_op: state claims pass, act claims do not', () => {
    const run = [helpdesk.resolveTicket('no_op')];

    it.each([
      'Ticket T-104 was already resolved, so nothing needed to change.',
      'T-104 is resolved.',
      'I checked, and T-104 is already closed.',
      'I found T-104 already resolved.',
    ])('allows %j', (answer) => {
      expect(guardAnswer(answer, run).ok).toBe(true);
    });

    it.each([
      ['I resolved T-104.', 'resolved'],
      ["We've closed ticket T-104.", 'closed'],
      ['Resolved T-104 for you.', 'resolved'],
      ['Done — T-104 is resolved.', 'done'],
    ])('flags %j', (answer, claim) => {
      const r = guardAnswer(answer, run);
      expect(r.violations).toMatchObject([{ kind: 'unverified_claim', claim, status: 'no_op' }]);
    });
  });
});

describe('guardAnswer: hedges that reach across a long subject', () => {
  it.each([
    'pending',
    'unknown',
    'failed',
  ] as const)('passes honest %s reports and flags the overclaims', (s) => {
    const run = [helpdesk.sendEmail(s)];
    for (const honest of [
      'I could not confirm that the email was sent.',
      "I'm not sure that the email to Ana was delivered.",
      'I am waiting for confirmation that the email was delivered.',
      "I'll let you know once the email to Ana is delivered.",
      'You asked me to send the email to Ana; it is not confirmed yet.',
    ]) {
      expect(guardAnswer(honest, run), honest).toEqual({ ok: true, violations: [] });
    }
    for (const overclaim of [
      'I can confirm that the email was sent.',
      'I was able to send the email to Ana.',
      'The email has gone out.',
      'I took care of it.',
      'About an hour ago I sent the email.',
    ]) {
      expect(guardAnswer(overclaim, run).ok, overclaim).toBe(false);
    }
  });

  it('names the sentence and the completion when a long hedge-free claim is flagged', () => {
    const r = guardAnswer('I checked, and I can confirm the email to Ana was delivered.', [
      helpdesk.sendEmail('pending'),
    ]);
    expect(r.violations).toMatchObject([
      {
        kind: 'unverified_claim',
        sentence: 'I checked, and I can confirm the email to Ana was delivered.',
        claim: 'delivered',
        operationId: 'op_1',
      },
    ]);
  });

  it('reads an idiom as a claim only when the clause names what it is about', () => {
    const run = [helpdesk.sendEmail('pending')];
    expect(guardAnswer('The power went out briefly, so the email is still queued.', run).ok).toBe(true);
    expect(guardAnswer('The email went out this morning.', run).violations).toMatchObject([
      { kind: 'unverified_claim', claim: 'went out', operationId: 'op_1' },
    ]);
  });
});

describe('guardAnswer: claims about another target of the same kind', () => {
  const run = [helpdesk.refundOrder('verified')];

  it.each([
    'Order 43 was refunded.',
    'I refunded order #43.',
    'Refunded order 43 in full.',
  ])('flags %j when only order 42 was refunded', (answer) => {
    const r = guardAnswer(answer, run);
    expect(r.violations).toMatchObject([{ kind: 'no_completion', claim: 'refunded', sentence: answer }]);
    expect(r.violations[0]?.detail).toMatch(/"order #?43", which no action in this run touched/i);
  });

  it('flags an effect the run never had, named with another order ("cancelled order 7")', () => {
    const r = guardAnswer('I refunded order 42 and cancelled order 7.', run);
    expect(kinds(r.violations)).toEqual(['no_completion:cancelled']);
  });

  it('flags an email to an address no action wrote to', () => {
    const r = guardAnswer('The email to bob@example.com was sent.', [helpdesk.sendEmail('verified')]);
    expect(r.violations).toMatchObject([{ kind: 'no_completion', claim: 'sent' }]);
  });

  it.each([
    'Order 42 was refunded.',
    'Order 42 was refunded; order 43 was not touched.',
    'I refunded the order 12 hours ago.',
    'I refunded order 42 12 days after delivery.',
  ])('passes %j', (answer) => {
    expect(guardAnswer(answer, run)).toEqual({ ok: true, violations: [] });
  });
});

describe('guardAnswer: a request that was sent is not its effect', () => {
  const accepted = (status: Status, next: 'poll' | 'ask_user' | 'none') =>
    helpdesk.refundOrder(status, { mode: 'accepted', nextAllowedAction: next });

  it('passes "I submitted the refund request" for refunds accepted and still pending', () => {
    const run = [accepted('pending', 'poll')];
    for (const answer of [
      'I submitted the refund request for order 42; it is still pending.',
      'The refund request was submitted and is pending confirmation.',
      'Your refund request has been sent. It has not been confirmed yet.',
    ]) {
      expect(guardAnswer(answer, run), answer).toEqual({ ok: true, violations: [] });
    }
  });

  it('flags the same words when nothing was sent: failed, unknown, or waiting for approval', () => {
    for (const c of [
      accepted('failed', 'none'),
      accepted('unknown', 'ask_user'),
      accepted('pending', 'ask_user'),
    ]) {
      const r = guardAnswer('I submitted the refund request for order 42.', [c]);
      expect(kinds(r.violations), c.status).toEqual(['unverified_claim:submitted']);
    }
  });

  it('still flags the effect itself, and verbs that report handling the request', () => {
    const run = [accepted('pending', 'poll')];
    expect(kinds(guardAnswer('The refund for order 42 was submitted.', run).violations)).toEqual([
      'unverified_claim:submitted',
    ]);
    expect(kinds(guardAnswer('I processed your refund request for order 42.', run).violations)).toEqual([
      'unverified_claim:processed',
    ]);
    expect(
      kinds(
        guardAnswer('I sent the email to Ana per your request.', [helpdesk.sendEmail('pending')]).violations,
      ),
    ).toEqual(['unverified_claim:sent']);
  });
});

describe('guardAnswer: no_completion', () => {
  it('flags an effect of an action that never ran', () => {
    const r = guardAnswer('I sent the email to Ana and refunded order 42.', [helpdesk.sendEmail('verified')]);
    expect(r.violations).toMatchObject([
      { kind: 'no_completion', claim: 'refunded', sentence: r.violations[0]?.sentence },
    ]);
    expect(r.violations[0]?.target).toBeUndefined();
  });

  it('flags any specific claim when nothing ran', () => {
    const r = guardAnswer('I sent the proposal to Ana.', []);
    expect(kinds(r.violations)).toEqual(['no_completion:sent']);
  });

  it('flags a generic claim about a named thing no action touched', () => {
    const r = guardAnswer('The migration is complete.', [helpdesk.resolveTicket('verified')]);
    expect(kinds(r.violations)).toEqual(['no_completion:complete']);
  });
});

describe('guardAnswer: unattributed_claim', () => {
  it('flags a bare wrap-up when some action is not verified', () => {
    const run = [helpdesk.resolveTicket('verified'), helpdesk.sendEmail('pending')];
    const r = guardAnswer('All set, everything is complete.', run);
    expect(kinds(r.violations)).toEqual(['unattributed_claim:all set', 'unattributed_claim:complete']);
    expect(r.violations[0]?.detail).toContain('1 of 2 actions are not verified');
  });

  it('flags a bare wrap-up when a no_op is the only outcome, since nothing was done', () => {
    expect(kinds(guardAnswer('Done.', [helpdesk.resolveTicket('no_op')]).violations)).toEqual([
      'unattributed_claim:done',
    ]);
  });

  it('flags a bare wrap-up when nothing ran', () => {
    const r = guardAnswer('Your request has been successfully completed.', []);
    expect(kinds(r.violations)).toEqual(['unattributed_claim:successfully', 'unattributed_claim:completed']);
    expect(r.violations[0]?.detail).toContain('no state-changing action ran');
  });
});

describe('guardAnswer: robustness', () => {
  it('ignores claims inside quoted or code spans', () => {
    const c = completion({ status: 'pending' });
    expect(guardAnswer('The check waits for “ticket is resolved” and `status=closed`.', [c]).ok).toBe(true);
  });

  it('reports one violation per claim and completion even when repeated', () => {
    const r = guardAnswer('Sent. Sent.', [helpdesk.sendEmail('failed')]);
    expect(r.violations).toHaveLength(1);
  });
});

describe('guardAnswer: one effect word over coordinated objects', () => {
  const t105 = (status: Status) =>
    helpdesk.resolveTicket(status, { target: 'ticket:T-105', operationId: 'op_t105' });

  it('holds "I resolved T-104 and T-105" to both tickets, so a no_op one is flagged', () => {
    const run = [helpdesk.resolveTicket('verified'), t105('no_op')];
    const r = guardAnswer('I resolved T-104 and T-105.', run);
    expect(r.violations.map((v) => [v.kind, v.target, v.status])).toEqual([
      ['unverified_claim', 'ticket:T-105', 'no_op'],
    ]);
    expect(guardAnswer('I resolved T-104 and T-105.', [run[0]!, t105('verified')]).ok).toBe(true);
  });

  it('follows a list of objects through commas and a final "and"', () => {
    const t106 = helpdesk.resolveTicket('pending', { target: 'ticket:T-106', operationId: 'op_t106' });
    const r = guardAnswer('I closed T-104, T-105 and T-106.', [
      helpdesk.resolveTicket('verified'),
      t105('verified'),
      t106,
    ]);
    expect(r.violations.map((v) => v.target)).toEqual(['ticket:T-106']);
  });

  it('stops at a clause with a verb of its own', () => {
    const run = [helpdesk.resolveTicket('verified'), t105('no_op')];
    expect(guardAnswer('I resolved T-104, and T-105 was already resolved.', run).ok).toBe(true);
    expect(guardAnswer('I resolved T-104 and T-105 is still open.', run).ok).toBe(true);
  });
});

describe('guardAnswer: a run of very many calls', () => {
  it('judges a claim against 150 000 completions without overflowing the stack', () => {
    const one = helpdesk.refundOrder('verified');
    const run = Array.from({ length: 150_000 }, (_, i) => ({
      ...one,
      target: `order:${i}`,
      operationId: `op_${i}`,
    }));
    run.push(helpdesk.sendEmail('pending'));
    const r = guardAnswer('I sent the email to Ana.', run);
    expect(kinds(r.violations)).toEqual(['unverified_claim:sent']);
  });
});
