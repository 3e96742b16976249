import { describe, expect, it } from 'vitest';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}:${v.operationId ?? ''}`);
const passes = (text: string, run: Parameters<typeof guardAnswer>[1]): void => {
  expect(guardAnswer(text, run), text).toEqual({ ok: true, violations: [] });
};

describe('guardAnswer: "received" and "arrived" claim the effect reached its recipient', () => {
  const run = [helpdesk.sendEmail('pending'), helpdesk.refundOrder('failed')];

  it('refuses them for an effect that is not verified', () => {
    expect(kinds(guardAnswer('The customer has received the refund.', run).violations)).toEqual([
      'unverified_claim:received:op_r42',
    ]);
    expect(kinds(guardAnswer('Ana has received the email.', run).violations)).toEqual([
      'unverified_claim:received:op_1',
    ]);
    expect(kinds(guardAnswer('The refund for order 42 has arrived.', run).violations)).toEqual([
      'unverified_claim:arrived:op_r42',
    ]);
  });

  it('allows them once the effect is verified', () => {
    const verified = [helpdesk.sendEmail('verified'), helpdesk.refundOrder('verified')];
    passes('Ana has received the email and the customer has received the refund.', verified);
  });

  it('passes honest sentences: what the speaker received, a negation, a hedge, trouble coming back', () => {
    for (const text of [
      'We received your request; the refund is being processed.',
      'I received an error from the email provider.',
      'Ana has not received the email yet.',
      'Ana should have received the email by now, but I could not confirm it.',
      'The email to Ana received a bounce.',
      'The email is queued, not sent yet.',
      'I could not confirm it was delivered.',
      'Nothing was sent.',
    ]) {
      passes(text, run);
    }
  });
});

describe('guardAnswer: "on its way" says the request went out, not that it arrived', () => {
  // A polled pending send went out and its effect is still to be seen: "on its way" says exactly that.
  it('allows it for a pending operation that is being polled', () => {
    passes('The email to Ana is on its way.', [helpdesk.sendEmail('pending')]);
    passes("It's on its way: the refund for order 42 is pending.", [
      helpdesk.refundOrder('pending', { nextAllowedAction: 'poll' }),
    ]);
  });

  it('refuses it when nothing went out or the outcome is failed or unknown', () => {
    for (const c of [
      helpdesk.sendEmail('failed'),
      helpdesk.sendEmail('unknown'),
      helpdesk.sendEmail('pending', { nextAllowedAction: 'ask_user' }),
    ]) {
      expect(kinds(guardAnswer('The email to Ana is on its way.', [c]).violations), c.status).toEqual([
        'unverified_claim:on its way:op_1',
      ]);
      expect(kinds(guardAnswer('The email is on the way.', [c]).violations)).toEqual([
        'unverified_claim:on the way:op_1',
      ]);
    }
  });

  it('passes "on the way" that is not a state of the operation, and a negation', () => {
    const run = [helpdesk.sendEmail('failed')];
    passes('The email to Ana got lost on the way.', run);
    passes('The email to Ana is not on its way yet.', run);
  });
});

describe('guardAnswer: other completion phrasings', () => {
  const run = [helpdesk.refundOrder('pending', { nextAllowedAction: 'poll' })];

  it('refuses each for a pending refund', () => {
    for (const [text, word] of [
      ['The refund for order 42 went through.', 'went through'],
      ['The refund is complete.', 'complete'],
      ['The refund was processed.', 'processed'],
      ['The refund has been taken care of.', 'taken care of'],
      ['The refund has gone through.', 'gone through'],
    ] as const) {
      expect(kinds(guardAnswer(text, run).violations), text).toEqual([`unverified_claim:${word}:op_r42`]);
    }
  });

  it('passes their honest forms', () => {
    for (const text of [
      'The refund for order 42 has not gone through yet.',
      'The refund is being processed.',
      'The refund is not complete until the bank confirms it.',
      'I could not confirm the refund went through.',
    ]) {
      passes(text, run);
    }
  });
});
