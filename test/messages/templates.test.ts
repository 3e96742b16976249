import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { STATUSES } from '../../src/contract/types.js';
import { defaultMessage, formMessage } from '../../src/messages/templates.js';
import { claimsCompletion, splitSentences } from '../../src/messages/words.js';
import { anyDraft, draft } from './fixtures.js';

describe('defaultMessage', () => {
  it('verified: says what holds, on which target, when it was observed', () => {
    const m = defaultMessage(draft({ status: 'verified' }));
    expect(m).toBe(
      'Verified: `resolve_ticket` operation `op_1` completed on `ticket:T-104`; ' +
        '“ticket T-104 has status resolved” holds, observed at 2025-03-01T10:00:00.000Z.',
    );
    expect(claimsCompletion(m)).toBe(true);
  });

  it('turns control characters and line separators in any part into single spaces', () => {
    const m = defaultMessage(
      draft({
        status: 'failed',
        action: 'resolve\nticket',
        target: 'ticket:\u0000T-104\u0085',
        postcondition: 'status\t\tresolved\u2028now\u2029',
        errorCode: 'readback_mismatch',
        reason: 'saw\r\n\u007fclosed',
      }),
    );
    expect(m).not.toMatch(/[\p{Cc}\u2028\u2029]/u);
    expect(m).toContain('`resolve ticket`');
    expect(m).toContain('`ticket: T-104`');
    expect(m).toContain('“status resolved now”');
    expect(m).toContain('“saw closed”');
  });

  it('pending: accepted, not verified, with an operation id to poll', () => {
    const m = defaultMessage(
      draft({
        status: 'pending',
        action: 'send_email',
        target: 'email:ana@example.com',
        postcondition: 'the email to ana@example.com is delivered',
        observedAt: undefined,
        nextAllowedAction: 'poll',
      }),
    );
    expect(m).toContain(
      'Pending: `send_email` on `email:ana@example.com` was accepted and is not verified yet',
    );
    expect(m).toContain('Operation `op_1` can be polled');
    expect(claimsCompletion(m)).toBe(false);
  });

  it('failed: what failed and why, with the checks that did not pass', () => {
    const m = defaultMessage(
      draft({
        status: 'failed',
        action: 'refundOrder',
        target: 'order:42',
        errorCode: 'readback_mismatch',
        reason: 'order 42 still shows refunded: false',
        postcondition: 'order 42 is refunded in full',
        checks: [
          { name: 'refunded', pass: false, expected: true, observed: false },
          { name: 'amount', pass: true },
        ],
      }),
    );
    expect(m).toContain('Failed: `refundOrder` on `order:42`');
    expect(m).toContain('Reason: `readback_mismatch`, “order 42 still shows refunded: false”');
    expect(m).toContain('“order 42 is refunded in full” was not observed');
    expect(m).toContain('Checks that did not pass: `refunded`.');
    expect(m).not.toContain('`amount`');
    expect(claimsCompletion(m)).toBe(false);
  });

  it('partial: counts and the failing units, capped with "and N more"', () => {
    const failedTargets = Array.from({ length: 13 }, (_, i) => `rec-${i + 1}`);
    const m = defaultMessage(
      draft({
        status: 'partial',
        action: 'migrate_batch',
        target: 'batch:2025-q1',
        units: { required: 40, passed: 27, failed: 13, failedTargets },
      }),
    );
    expect(m).toContain('27 of 40 units passed the readback and 13 did not');
    expect(m).toContain('`rec-10` and 3 more.');
    expect(m).not.toContain('rec-11');
    expect(claimsCompletion(m)).toBe(false);
  });

  it('partial without units falls back to the failing checks', () => {
    const m = defaultMessage(
      draft({ status: 'partial', checks: [{ name: 'assignee', pass: false }], units: undefined }),
    );
    expect(m).toContain('some required conditions passed the readback and others did not');
    expect(m).toContain('`assignee`');
  });

  it('no_op: the state that was found, and that nothing changed', () => {
    const m = defaultMessage(draft({ status: 'no_op', evidence: { status: 'resolved' } }));
    expect(m).toBe(
      'No change needed: `ticket:T-104` already satisfied “ticket T-104 has status resolved” ' +
        '(found `status=resolved`), so `resolve_ticket` made no change (operation `op_1`).',
    );
    expect(claimsCompletion(m)).toBe(false);
  });

  it('unknown: verification inconclusive, the operation kept for recovery', () => {
    const m = defaultMessage(
      draft({ status: 'unknown', errorCode: 'verifier_unavailable', reason: 'mail API timed out' }),
    );
    expect(m).toContain('could not be determined (`verifier_unavailable`, “mail API timed out”)');
    expect(m).toContain('may or may not have taken effect');
    expect(m).toContain('Operation `op_1` is kept for recovery');
    expect(claimsCompletion(m)).toBe(false);
  });

  it('keeps every message on one line even when the free text has line breaks', () => {
    const m = defaultMessage(draft({ status: 'failed', reason: 'line one\nline two' }));
    expect(m).not.toContain('\n');
  });

  it('never claims completion unless verified, for any draft (property)', () => {
    fc.assert(
      fc.property(anyDraft, (d) => {
        const m = defaultMessage(d);
        expect(typeof m).toBe('string');
        expect(m.length).toBeGreaterThan(0);
        expect(claimsCompletion(m)).toBe(d.status === 'verified');
      }),
      { numRuns: 500 },
    );
  });

  it('states each status in a sentence that names the operation', () => {
    for (const status of STATUSES) {
      const m = defaultMessage(draft({ status, operationId: 'op_77' }));
      expect(splitSentences(m).some((s) => s.includes('`op_77`'))).toBe(true);
    }
  });
});

describe('formMessage', () => {
  const pending = draft({ status: 'pending', action: 'send_email', target: 'email:ana@example.com' });

  it('uses the default when there is no override for the status', () => {
    expect(formMessage(pending, { verified: () => 'Sent!' })).toEqual({ message: defaultMessage(pending) });
    expect(formMessage(pending)).toEqual({ message: defaultMessage(pending) });
  });

  it('uses an honest override', () => {
    const r = formMessage(pending, { pending: (d) => `Queued mail for ${d.target}; not confirmed yet.` });
    expect(r).toEqual({ message: 'Queued mail for email:ana@example.com; not confirmed yet.' });
  });

  it('lets a verified override claim completion', () => {
    const verified = draft({ status: 'verified' });
    expect(formMessage(verified, { verified: () => 'Done: T-104 is resolved.' })).toEqual({
      message: 'Done: T-104 is resolved.',
    });
  });

  it('refuses an override that claims completion for a non-verified status', () => {
    const r = formMessage(pending, { pending: () => 'The email was sent to Ana.' });
    expect(r.message).toBe(defaultMessage(pending));
    expect(r.overrideRejected).toBe(
      'the pending message override claims completion ("sent") but the status is pending',
    );
    for (const status of STATUSES.filter((s) => s !== 'verified')) {
      const d = draft({ status });
      expect(formMessage(d, { [status]: () => 'All set!' }).overrideRejected).toContain('claims completion');
    }
  });

  it('refuses an override that throws', () => {
    const r = formMessage(pending, {
      pending: () => {
        throw new Error('template bug');
      },
    });
    expect(r).toEqual({
      message: defaultMessage(pending),
      overrideRejected: 'the pending message override threw: template bug',
    });
  });

  it('refuses an override that returns a non-string or an empty string', () => {
    const notString = formMessage(pending, { pending: () => 42 as unknown as string });
    expect(notString.message).toBe(defaultMessage(pending));
    expect(notString.overrideRejected).toBe('the pending message override returned number, not a string');
    const empty = formMessage(pending, { pending: () => '   ' });
    expect(empty.overrideRejected).toBe('the pending message override returned an empty message');
    const nothing = formMessage(pending, { pending: () => null as unknown as string });
    expect(nothing.overrideRejected).toBe('the pending message override returned null, not a string');
  });

  it('hands the template a copy, so it cannot alter the draft', () => {
    const d = draft({ status: 'failed' });
    formMessage(d, {
      failed: (c) => {
        (c as { status: string }).status = 'verified';
        return 'The refund failed.';
      },
    });
    expect(d.status).toBe('failed');
  });
});
