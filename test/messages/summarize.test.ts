import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Completion } from '../../src/contract/types.js';
import { guardAnswer } from '../../src/messages/guard.js';
import { summarize } from '../../src/messages/summarize.js';
import { defaultMessage } from '../../src/messages/templates.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { anyDrafts, completion, helpdesk } from './fixtures.js';

describe('summarize', () => {
  it('says no state-changing action ran when there are none', () => {
    const text = summarize([]);
    expect(text).toBe('No state-changing action was run, so there is nothing to report.');
    expect(guardAnswer(text, []).ok).toBe(true);
  });

  it('leads with counts, then one line per completion, verified first and failed last', () => {
    const run = [
      helpdesk.refundOrder('failed'),
      helpdesk.sendEmail('pending'),
      helpdesk.resolveTicket('verified'),
      helpdesk.migrateBatch('partial'),
      completion({ status: 'no_op', target: 'ticket:T-200', operationId: 'op_t200' }),
      completion({ status: 'unknown', action: 'close_account', target: 'account:9', operationId: 'op_a9' }),
    ];
    const lines = summarize(run).split('\n');
    expect(lines[0]).toBe(
      '1 of 6 actions verified; 1 needed no change, 1 pending, 1 partial, 1 unknown, 1 failed.',
    );
    expect(lines.slice(1).map((l) => l.split(':')[0])).toEqual([
      '- Verified',
      '- No change needed',
      '- Pending',
      '- Partial',
      '- Unknown',
      '- Failed',
    ]);
    expect(claimsCompletion(lines[0]!)).toBe(false);
    expect(guardAnswer(summarize(run), run)).toEqual({ ok: true, violations: [] });
  });

  it('words the lead line for a single verified action', () => {
    expect(summarize([helpdesk.resolveTicket('verified')]).split('\n')[0]).toBe('1 of 1 action verified.');
  });

  it('repeats each completion message on one line', () => {
    const c = completion({ status: 'pending' }, 'Queued;\nnot confirmed yet.');
    expect(summarize([c]).split('\n')[1]).toBe('- Queued; not confirmed yet.');
  });

  it('replaces a non-verified message that overclaims with the default', () => {
    const c: Completion = completion({ status: 'pending' }, 'All done, the ticket is resolved!');
    const text = summarize([c]);
    expect(text).toContain(defaultMessage(c));
    expect(text).not.toContain('All done');
    expect(guardAnswer(text, [c]).ok).toBe(true);
  });

  it('passes its own guard for any completions with default messages (property)', () => {
    fc.assert(
      fc.property(anyDrafts, (drafts) => {
        const completions = drafts.map((d) => ({ ...d, message: defaultMessage(d) }));
        const result = guardAnswer(summarize(completions), completions);
        expect(result.violations).toEqual([]);
        expect(result.ok).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});
