import { describe, expect, it } from 'vitest';
import type { UnitSummary } from '../../src/contract/types.js';
import { guardAnswer } from '../../src/messages/guard.js';
import { summarize } from '../../src/messages/summarize.js';
import { defaultMessage, formMessage, MAX_VALUE_LENGTH } from '../../src/messages/templates.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { completion, draft } from './fixtures.js';

describe('defaultMessage: values that would break the message', () => {
  it('cuts a huge reason, postcondition, target or check name, keeping the status and the operation id', () => {
    const huge = 'x'.repeat(1_000_000);
    for (const d of [
      draft({ status: 'failed', reason: huge }),
      draft({ status: 'pending', postcondition: huge }),
      draft({ status: 'unknown', target: `ticket:${huge}` }),
      draft({ status: 'failed', checks: [{ name: huge, pass: false }] }),
    ]) {
      const message = defaultMessage(d);
      expect(message.length).toBeLessThan(1000);
      expect(message).toContain('`op_1`');
      expect(message).toContain(`${'x'.repeat(MAX_VALUE_LENGTH - 20)}`);
      expect(message).toContain('...');
    }
  });

  it('does not split a surrogate pair where it cuts', () => {
    const message = defaultMessage(draft({ status: 'failed', reason: `a${'😀'.repeat(400)}` }));
    expect(message).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it('drops bidirectional overrides and zero-width characters from values', () => {
    const message = defaultMessage(
      draft({ status: 'failed', reason: 'card \u202edenilced\u202c', target: 'ticket:T-\u200b104' }),
    );
    expect(message).not.toMatch(/[\u200b\u202a-\u202e]/);
    expect(message).toContain('`ticket:T-104`');
  });

  it('never lets non-numeric unit counts from a hand-built completion claim completion', () => {
    const units = {
      required: 2,
      passed: 'all. Everything was migrated. Done',
      failed: 0,
      failedTargets: [],
    } as unknown as UnitSummary;
    const message = defaultMessage(draft({ status: 'partial', units }));
    expect(claimsCompletion(message)).toBe(false);
    const c = { ...completion({ status: 'partial', units }), message: '' };
    expect(guardAnswer(summarize([c]), [c]).ok).toBe(true);
  });
});

describe('formMessage: a template cannot alter the completion', () => {
  it('keeps the draft’s checks and units when an override mutates them', () => {
    const d = draft({
      status: 'partial',
      checks: [{ name: 'unit:rec-3', pass: false }],
      units: { required: 10, passed: 8, failed: 2, failedTargets: ['rec-3', 'rec-7'] },
    });
    const formed = formMessage(d, {
      partial: (c) => {
        // A plausible bug: "show the first one" with splice, which empties the list it reads.
        const first = c.units?.failedTargets.splice(0, 2)[0];
        c.checks[0]!.pass = true;
        return `Partial: 8 of 10 units passed the readback; ${first} and others did not.`;
      },
    });
    expect(formed.overrideRejected).toBeUndefined();
    expect(d.units?.failedTargets).toEqual(['rec-3', 'rec-7']);
    expect(d.checks[0]?.pass).toBe(false);
  });
});
