import type { ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { describe, expect, it } from 'vitest';
import { shadowToolResult, toolResult } from '../../src/anthropic/index.js';
import { createRunner } from '../../src/index.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { ctx, setup } from '../runner/support.js';

describe('readback/anthropic toolResult', () => {
  it('answers a tool_use with the allowed message, the status in words and is_error for failed/unknown', async () => {
    const { hd, runner } = setup();
    const verified = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    hd.mail.faults.nextOutcome = 'dropped';
    const dropped = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 's', body: 'b' },
      ctx,
    );
    const pending = await runner.run(
      hd.actions.sendEmail,
      { to: 'bo@example.com', subject: 's', body: 'b' },
      { ...ctx, wait: false },
    );
    const paged = await runner.run(hd.actions.pageOncall, { message: 'db down' }, ctx);

    // The block must be accepted where the SDK expects a ToolResultBlockParam.
    const blocks: ToolResultBlockParam[] = [
      toolResult('toolu_01', verified),
      toolResult('toolu_02', dropped),
      toolResult('toolu_03', pending),
      toolResult('toolu_04', paged),
    ];
    expect(blocks.map((b) => [b.tool_use_id, b.is_error])).toEqual([
      ['toolu_01', false],
      ['toolu_02', true],
      ['toolu_03', false],
      ['toolu_04', true],
    ]);
    const texts = blocks.map((b) =>
      Array.isArray(b.content) && b.content[0]?.type === 'text' ? b.content[0].text : '',
    );
    expect(texts[0]).toMatch(/^\[status: verified\] Verified:/);
    expect(texts[1]).toMatch(/^\[status: failed, errorCode: provider_failed, next: ask_user\] Failed:/);
    expect(texts[2]).toMatch(/^\[status: pending, errorCode: in_progress, next: poll\] Pending:/);
    expect(texts[3]).toMatch(/^\[status: unknown, errorCode: unverifiable/);
    // Only the verified result may read as done to the model.
    expect(texts.map((t) => claimsCompletion(t))).toEqual([true, false, false, false]);
    const json = blocks[2]!.content;
    expect(Array.isArray(json) && json[1]?.type === 'text' ? JSON.parse(json[1].text) : null).toMatchObject({
      status: 'pending',
      operationId: pending.operationId,
      nextAllowedAction: 'poll',
    });
    expect(hd.mail.inbox('ana@example.com')).toEqual([]);
  });

  it('refuses a missing tool_use id', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(() => toolResult('', c)).toThrow(
      expect.objectContaining({ code: 'invalid_options', field: 'toolUseId' }),
    );
  });

  it('refuses anything but a completion instead of showing the model a status it is not', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const shadowLike = { executed: true, result: { ok: true }, completion: c };
    for (const given of [undefined, { ok: true }, shadowLike, { ...c, status: 'done' }]) {
      expect(() => toolResult('toolu_1', given as never)).toThrow(
        expect.objectContaining({ code: 'invalid_options', field: 'completion' }),
      );
    }
    expect(() => toolResult('toolu_1', shadowLike as never)).toThrow('use shadowToolResult');
  });
});

describe('readback/anthropic shadowToolResult', () => {
  it("answers with the live tool's own response, never readback's verdict", async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const runner = createRunner({ clock: hd.clock, random: () => 0.5, shadow: true });
    hd.tickets.faults.softFailNextWrite = true;
    const soft = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const queued = await runner.shadow(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 's', body: 'b' },
      ctx,
    );
    const invalid = await runner.shadow(hd.actions.updateTicket, { id: 7 }, ctx);

    const blocks: ToolResultBlockParam[] = [
      shadowToolResult('toolu_1', soft),
      shadowToolResult('toolu_2', queued),
      shadowToolResult('toolu_3', invalid),
    ];
    const texts = blocks.map((b) =>
      Array.isArray(b.content) && b.content[0]?.type === 'text' ? b.content[0].text : '',
    );
    // The tool claimed success and the model sees that claim; the record holds the disagreement.
    expect(texts[0]).toBe('{"ok":true,"version":2}');
    expect(soft.completion.shadow?.agrees).toBe(false);
    expect(JSON.parse(texts[1] ?? '')).toMatchObject({ status: 'queued' });
    expect(texts[2]).toMatch(/^\[not executed: invalid_input\]/);
    expect(blocks.map((b) => b.is_error)).toEqual([false, false, true]);
    expect(hd.tickets.writes).toHaveLength(0);
  });

  it('refuses a completion or anything else that is not a ShadowResult', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    for (const given of [undefined, null, c, { result: 'ok' }]) {
      expect(() => shadowToolResult('toolu_1', given as never)).toThrow(
        expect.objectContaining({ code: 'invalid_options', field: 'shadow' }),
      );
    }
    expect(() => shadowToolResult('toolu_1', c as never)).toThrow('use toolResult');
  });
});
