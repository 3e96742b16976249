import { describe, expect, it } from 'vitest';
import { claimsCompletion, EFFECT_WORDS, findClaims, splitSentences } from '../../src/messages/words.js';

const words = (s: string): string[] => findClaims(s).map((c) => c.word);

describe('splitSentences', () => {
  it('splits at sentence punctuation and line breaks', () => {
    expect(
      splitSentences('T-104 is resolved. The email is pending! Was it sent?\n- Order 42 failed'),
    ).toEqual(['T-104 is resolved.', 'The email is pending!', 'Was it sent?', 'Order 42 failed']);
  });

  it('keeps emails, decimals, abbreviations and quoted text inside one sentence', () => {
    expect(splitSentences('I wrote to ana@example.com about the 4.5% fee, e.g. the refund. Next.')).toEqual([
      'I wrote to ana@example.com about the 4.5% fee, e.g. the refund.',
      'Next.',
    ]);
    expect(splitSentences('Expected “Done. All set.” to hold. Then `a. b` too.')).toEqual([
      'Expected “Done. All set.” to hold.',
      'Then `a. b` too.',
    ]);
  });

  it('returns nothing for blank text', () => {
    expect(splitSentences('  \n ')).toEqual([]);
  });
});

describe('findClaims', () => {
  it('finds effect words with their verb stems', () => {
    const claims = findClaims('I sent the email and refunded order 42.');
    expect(claims.map((c) => [c.word, c.stem])).toEqual([
      ['sent', 'send'],
      ['refunded', 'refund'],
    ]);
  });

  it('handles inflections and spellings', () => {
    expect(findClaims('The booking was cancelled.')[0]?.stem).toBe('cancel');
    expect(findClaims('The booking was canceled.')[0]?.stem).toBe('cancel');
    expect(findClaims('The invoice is paid.')[0]?.stem).toBe('pay');
    expect(findClaims('It went through successfully.').map((c) => c.word)).toEqual([
      'went through',
      'successfully',
    ]);
    expect(findClaims('You are all set.').map((c) => c.word)).toEqual(['all set']);
    expect(findClaims("It's been taken care of.").map((c) => c.word)).toEqual(['taken care of']);
  });

  it('knows the documented word list', () => {
    for (const w of [
      'done',
      'completed',
      'sent',
      'delivered',
      'refunded',
      'merged',
      'deployed',
      'archived',
    ]) {
      expect(EFFECT_WORDS).toContain(w);
    }
  });

  it.each([
    'The email was not yet sent.',
    'The email was never sent.',
    "The email wasn't sent.",
    'The email hasn’t been delivered.',
    'No refund was issued.',
    'I was unable to get the ticket resolved.',
    'I could not confirm that it was delivered.',
    'The refund cannot be processed today.',
    'The email may have been sent.',
    'The ticket might have been resolved.',
    'It is unverified that the refund was issued.',
    'Unconfirmed reports say it was delivered.',
    'The refund is pending, to be issued by the bank later.',
    'It will be deployed tonight.',
    "I'll let you know once it is delivered.",
    'The migration needs to be completed by Friday.',
    'Please complete the form.',
    'I am going to send it; it is about to be sent.',
    'Was the email sent?',
    'The postcondition “ticket is resolved” is expected.',
    'Status `completed` is what we wait for.',
  ])('sees no claim in %j', (sentence) => {
    expect(words(sentence)).toEqual([]);
  });

  // Scope that a window of a few words misses: a long subject between the hedge and the word.
  it.each([
    'I could not confirm that the email was sent.',
    'I have not yet been able to confirm that the email was actually sent.',
    "I'm not sure that the email to Ana was delivered.",
    'I am waiting for confirmation that the email was delivered.',
    'There is no confirmation yet that the email to Ana was delivered.',
    'Nothing confirms that the email was delivered yet.',
    "I'll let you know once the email to Ana is delivered.",
    "I'll let you know as soon as the email is delivered.",
    "I don't know if the email to Ana was delivered.",
    'You asked me to make sure the proposal is delivered to Ana.',
    'Please confirm the email was delivered.',
    'Next step: verify the refund was issued.',
  ])('sees no claim in %j (clause-wide scope)', (sentence) => {
    expect(words(sentence)).toEqual([]);
  });

  it.each([
    ['I can confirm the email was sent.', ['sent']],
    ['I was able to send the email to Ana.', ['send']],
    ['I managed to complete the migration.', ['complete']],
    ["I'd already sent the email.", ['sent']],
    ['About an hour ago I sent the email.', ['sent']],
    ['As you asked I sent the email.', ['sent']],
    ['Once again I sent the email.', ['sent']],
    ['With no errors I can confirm the email was sent.', ['sent']],
    ['The email has gone out.', ['gone out']],
    ['I took care of it.', ['took care of']],
    ['Email dispatched.', ['dispatched']],
    ['All contacts were synced.', ['synced']],
  ])('finds the claim in %j', (sentence, expected) => {
    expect(words(sentence)).toEqual(expected);
  });

  it('still hedges "able to" when it is negated or in the future', () => {
    expect(words("I wasn't able to send the email.")).toEqual([]);
    expect(words('I will be able to send it tomorrow.')).toEqual([]);
    expect(words('I was unable to send the email.')).toEqual([]);
  });

  it('keeps an affirmative claim next to a hedge about something else', () => {
    expect(words('The email was sent but delivery is pending.')).toEqual(['sent']);
    expect(words('It is not urgent, the ticket is resolved.')).toEqual(['resolved']);
    expect(words('No problem — the refund was issued.')).toEqual(['issued']);
    // A hedge stops at its clause: the pending part does not excuse the claim.
    expect(words('The refund is pending and issued.')).toEqual(['issued']);
  });

  it('tells acts from states', () => {
    const agentive = (s: string): boolean[] => findClaims(s).map((c) => c.agentive);
    expect(agentive('I resolved T-104.')).toEqual([true]);
    expect(agentive("We've resolved T-104.")).toEqual([true]);
    expect(agentive('Resolved T-104 for you.')).toEqual([true]);
    expect(agentive('Done.')).toEqual([true]);
    expect(agentive('T-104 is resolved.')).toEqual([false]);
    expect(agentive('T-104 was already resolved.')).toEqual([false]);
    expect(agentive('I found T-104 already resolved.')).toEqual([false]);
    expect(agentive('I confirmed the ticket status.')).toEqual([false]);
  });

  it('reports the clause each claim sits in', () => {
    const [claim] = findClaims('Ana asked twice, and the proposal was sent this morning.');
    expect(claim?.clause).toBe('the proposal was sent this morning.');
  });
});

describe('claimsCompletion', () => {
  it('is true when any sentence affirms an effect', () => {
    expect(claimsCompletion('Checking now. Done, I sent it.')).toBe(true);
  });

  it('is false for honest status reports', () => {
    expect(
      claimsCompletion('I queued the email to Ana; delivery is not confirmed yet (operation op_1).'),
    ).toBe(false);
    expect(claimsCompletion('The refund for order 42 failed: the card was declined.')).toBe(false);
    expect(claimsCompletion('')).toBe(false);
  });
});
