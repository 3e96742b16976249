import { describe, expect, it } from 'vitest';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { findClaims } from '../../src/messages/words.js';
import { completion, helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}:${v.operationId ?? ''}`);
const invoice = (status: 'pending' | 'verified' | 'failed') =>
  completion({
    status,
    action: 'update_invoice',
    target: 'invoice:INV-7',
    operationId: 'op_inv',
    postcondition: 'invoice INV-7 is updated',
  });

describe('guardAnswer: clauses joined without commas', () => {
  it('judges each of two statements joined by "and", whichever is unresolved', () => {
    const text = 'The email was sent and the ticket is closed.';
    expect(
      kinds(guardAnswer(text, [helpdesk.sendEmail('verified'), helpdesk.resolveTicket('failed')]).violations),
    ).toEqual(['unverified_claim:closed:op_t104']);
    expect(
      kinds(
        guardAnswer(text, [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('verified')]).violations,
      ),
    ).toEqual(['unverified_claim:sent:op_1']);
  });

  it('refuses a claim after "so" that an unresolved or absent operation does not support', () => {
    expect(
      kinds(guardAnswer('I updated the invoice so you are all set.', [invoice('pending')]).violations),
    ).toEqual(['unverified_claim:updated:op_inv', 'unverified_claim:all set:op_inv']);
    // No ticket action ran: the claim after "so" is not about the verified email.
    expect(
      kinds(
        guardAnswer('The email was sent so the ticket is closed.', [helpdesk.sendEmail('verified')])
          .violations,
      ),
    ).toEqual(['no_completion:closed:']);
  });

  it('does not let a negation before "so" or "then" hide the claim after it', () => {
    const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('failed')];
    expect(kinds(guardAnswer('The ticket was not resolved so I sent the email.', run).violations)).toEqual([
      'unverified_claim:sent:op_1',
    ]);
    expect(
      kinds(
        guardAnswer('I could not confirm the email was delivered so I closed the ticket.', run).violations,
      ),
    ).toEqual(['unverified_claim:closed:op_t104']);
    expect(kinds(guardAnswer('I did not resolve T-104 then sent the email to Ana.', run).violations)).toEqual(
      ['unverified_claim:sent:op_1'],
    );
  });

  it('passes honest sentences with "so", "then" and "so that"', () => {
    const run = [helpdesk.sendEmail('pending'), helpdesk.resolveTicket('failed')];
    for (const text of [
      'The ticket could not be resolved so nothing was sent.',
      'The email is queued, not sent yet, so I could not confirm it was delivered.',
      'If the email is delivered then the ticket is closed.',
      'Once the email is delivered so is the ticket closed.',
      'I queued the email so that it is delivered tomorrow.',
      'The email has not been sent so far.',
    ]) {
      expect(guardAnswer(text, run), text).toEqual({ ok: true, violations: [] });
    }
    expect(guardAnswer('I sent the email so Ana has it.', [helpdesk.sendEmail('verified')]).ok).toBe(true);
  });

  it('ties a verb with no subject of its own to the clause before ("sent and delivered")', () => {
    const user = (i: number, status: 'verified' | 'pending') =>
      helpdesk.sendEmail(status, { target: `email:user${i}@example.com`, operationId: `op_${i}` });
    const run = [user(1, 'verified'), user(2, 'pending'), user(3, 'pending')];
    // Before, "delivered" stood alone and was held against every pending email of the run.
    expect(guardAnswer('The email to user1@example.com was sent and delivered.', run)).toEqual({
      ok: true,
      violations: [],
    });
    expect(
      kinds(guardAnswer('The email to user2@example.com was sent and delivered.', run).violations),
    ).toEqual(['unverified_claim:sent:op_2', 'unverified_claim:delivered:op_2']);
    expect(findClaims('I closed T-104 and then archived it.').map((c) => c.clause)).toEqual([
      'I closed T-104',
      'I closed T-104 and then archived it.',
    ]);
    // A verb with an object of its own keeps its own clause.
    expect(findClaims('I sent the email and closed the ticket.').map((c) => c.clause)).toEqual([
      'I sent the email',
      'closed the ticket.',
    ]);
  });
});
