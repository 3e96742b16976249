import { describe, expect, it } from 'vitest';
import { toolResult } from '../../src/anthropic/index.js';
import { completionText } from '../../src/integrations/text.js';
import { guardAnswer } from '../../src/messages/guard.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { ctx, setup } from '../runner/support.js';

const mail = { to: 'bo@example.com', subject: 's', body: 'b' };

/** The two text items of a tool_result block: the words, then the JSON view. */
function textsOf(block: ReturnType<typeof toolResult>): [string, Record<string, unknown>] {
  return [block.content[0]?.text ?? '', JSON.parse(block.content[1]?.text ?? 'null')];
}

describe('readback/anthropic toolResult and pollAfter (audit)', () => {
  it('pending work: the text says when to poll again and the JSON view carries pollAfter', async () => {
    const { hd, runner } = setup();
    const pending = await runner.run(hd.actions.sendEmail, mail, { ...ctx, wait: false });
    expect(pending).toMatchObject({ status: 'pending', nextAllowedAction: 'poll' });
    expect(pending.pollAfter).toBeDefined();

    const [text, view] = textsOf(toolResult('toolu_01', pending));
    expect(text).toMatch(/^\[status: pending, errorCode: in_progress, next: poll\] Pending:/);
    expect(text.endsWith(`(poll again after ${pending.pollAfter}) (operation ${pending.operationId})`)).toBe(
      true,
    );
    expect(view).toMatchObject({
      status: 'pending',
      nextAllowedAction: 'poll',
      pollAfter: pending.pollAfter,
    });
    // Still words for work not done: no completion claim, and the guard lets an agent relay it as is.
    expect(claimsCompletion(text)).toBe(false);
    expect(guardAnswer(text, [pending]).ok).toBe(true);
  });

  it('settled work shows no due time; an in-doubt unknown shows none either (its poll reads at once)', async () => {
    const { hd, runner } = setup();
    const pending = await runner.run(hd.actions.sendEmail, mail, { ...ctx, wait: false });
    hd.clock.advance(hd.mail.deliveryDelayMs);
    const verified = await runner.poll(pending.operationId, { wait: true });
    expect(verified.status).toBe('verified');
    const [vText, vView] = textsOf(toolResult('toolu_02', verified));
    expect(vText).not.toContain('poll again');
    expect(vView).not.toHaveProperty('pollAfter');

    // The runner marks an in-doubt unknown with its read-back time too (test/runner/poll-pacing-audit.test.ts).
    const inDoubt = { ...pending, status: 'unknown' as const, errorCode: 'in_flight' };
    const [uText, uView] = textsOf(toolResult('toolu_03', inDoubt));
    expect(uText).toBe(completionText(inDoubt));
    expect(uText).not.toContain('poll again');
    expect(uView).not.toHaveProperty('pollAfter');
  });
});
