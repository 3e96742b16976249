import { describe, expect, it } from 'vitest';
import { guardAnswer, type Violation } from '../../src/messages/guard.js';
import { formMessage } from '../../src/messages/templates.js';
import { completion, draft, helpdesk } from './fixtures.js';

const kinds = (vs: Violation[]): string[] => vs.map((v) => `${v.kind}:${v.claim}`);
const post = (status: 'pending' | 'verified') =>
  completion({
    status,
    action: 'publish_post',
    target: 'post:launch-7',
    operationId: 'op_p7',
    postcondition: 'post launch-7 is published',
  });

describe('guardAnswer: quote marks do not hide the speaker’s own claim', () => {
  const run = [helpdesk.sendEmail('pending')];

  it('flags a claim word in scare quotes after a copula', () => {
    expect(kinds(guardAnswer('The email to Ana was "sent".', run).violations)).toEqual([
      'unverified_claim:sent',
    ]);
    expect(kinds(guardAnswer('The email’s status is “delivered”.', run).violations)).toEqual([
      'unverified_claim:delivered',
    ]);
  });

  it('flags an answer that is one quoted sentence', () => {
    expect(kinds(guardAnswer('“The email to Ana was sent.”', run).violations)).toEqual([
      'unverified_claim:sent',
    ]);
    expect(kinds(guardAnswer('> "Sent the proposal to ana@example.com!"', run).violations)).toEqual([
      'unverified_claim:sent',
    ]);
  });

  it('still passes honest quoting: a status word, a negation, what a tool reported, a quoted question', () => {
    for (const text of [
      'The email status is "pending".',
      'The email status is “not sent yet”.',
      'The provider returned "sent", but delivery to Ana is not confirmed.',
      '"Was the email to Ana sent?"',
      'The postcondition “the proposal email to ana@example.com is delivered” has not been observed.',
    ]) {
      expect(guardAnswer(text, run), text).toEqual({ ok: true, violations: [] });
    }
  });

  it('refuses a pending message override that hides "sent" in quotes', () => {
    const formed = formMessage(draft({ status: 'pending', action: 'send_email' }), {
      pending: () => 'The email to Ana was "sent".',
    });
    expect(formed.overrideRejected).toBe(
      'the pending message override claims completion ("sent") but the status is pending',
    );
    expect(formed.message).toMatch(/^Pending: /);
  });
});

describe('guardAnswer: paraphrases of completion', () => {
  it('flags "is live" / "went live" for a publish that is only pending, but not an unrelated "live"', () => {
    const run = [post('pending')];
    expect(kinds(guardAnswer('The post is live.', run).violations)).toEqual(['unverified_claim:is live']);
    expect(kinds(guardAnswer('Post launch-7 went live.', run).violations)).toEqual([
      'unverified_claim:went live',
    ]);
    for (const text of [
      'Post launch-7 is not live yet.',
      "Post launch-7 isn't live.",
      'Post launch-7 will be live once approved.',
      'The game is live on TV.',
      'I live in Paris.',
    ]) {
      expect(guardAnswer(text, run).ok, text).toBe(true);
    }
    expect(guardAnswer('The post is live.', [post('verified')]).ok).toBe(true);
  });

  it('flags "Success!", "It worked." and "All good!" when anything is unverified', () => {
    const run = [helpdesk.resolveTicket('verified'), helpdesk.sendEmail('unknown')];
    expect(kinds(guardAnswer('Success!', run).violations)).toEqual(['unattributed_claim:success']);
    expect(kinds(guardAnswer('It worked.', run).violations)).toEqual(['unattributed_claim:it worked']);
    expect(kinds(guardAnswer('Great news — all good!', run).violations)).toEqual([
      'unattributed_claim:all good',
    ]);
    for (const text of [
      'We had no success reaching the mail API.',
      'The success rate of the mail API is low.',
      "I'm not sure it worked.",
    ]) {
      expect(guardAnswer(text, run).ok, text).toBe(true);
    }
  });

  it('flags a claim opened by the conjunction "Yet"', () => {
    const r = guardAnswer('Yet the email was delivered.', [helpdesk.sendEmail('pending')]);
    expect(kinds(r.violations)).toEqual(['unverified_claim:delivered']);
  });

  it('passes "I sent nothing": the object takes the claim back', () => {
    expect(guardAnswer('I sent nothing.', [helpdesk.sendEmail('failed')]).ok).toBe(true);
  });
});

describe('guardAnswer: one claim echoed for a second call', () => {
  const run = [
    helpdesk.sendEmail('verified'),
    helpdesk.sendEmail('pending', { target: 'email:bob@example.com', operationId: 'op_2' }),
  ];

  it('flags "…; Bob’s too" and "…, and so was Bob’s" when Bob’s email is pending', () => {
    for (const text of [
      "Ana's email was delivered; Bob's too.",
      "The email to Ana was delivered, and so was Bob's.",
      'The email to Ana was delivered, as was the one to Bob.',
      'The email to Ana was delivered, and the one to Bob as well.',
    ]) {
      expect(guardAnswer(text, run).violations, text).toMatchObject([
        { kind: 'unverified_claim', operationId: 'op_2', status: 'pending' },
      ]);
    }
  });

  it('passes when the second clause says Bob’s is not done', () => {
    for (const text of [
      "The email to Ana was delivered; Bob's was not.",
      "The email to Ana was delivered; Bob's is pending too.",
      "The email to Ana was delivered, but not Bob's.",
      "The email to Ana was delivered, Bob's isn't yet.",
    ]) {
      expect(guardAnswer(text, run), text).toEqual({ ok: true, violations: [] });
    }
  });
});
