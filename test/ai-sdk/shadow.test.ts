import { generateText, stepCountIs } from 'ai';
import { describe, expect, it } from 'vitest';
import { aiTool, aiTools, completionsOf, shadowAiTool } from '../../src/ai-sdk/index.js';
import { createRunner } from '../../src/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { scriptedModel, shownOnSecondCall } from './support.js';

const scope = { tenant: 'acme' };

function shadowHelpdesk() {
  const hd = createHelpdesk();
  const runner = createRunner({ clock: hd.clock, random: () => 0.5, shadow: true });
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  return { hd, runner };
}

describe('readback/ai-sdk in shadow mode, with generateText', () => {
  it("the model is shown the live tool's own claim; the record keeps readback's disagreeing verdict", async () => {
    const { hd, runner } = shadowHelpdesk();
    hd.tickets.faults.softFailNextWrite = true;
    const model = scriptedModel('update_ticket', { id: 'T-104', status: 'resolved' }, 'Resolved T-104.');
    const result = await generateText({
      model,
      tools: aiTools(runner, hd.actions, { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Resolve ticket T-104.',
    });
    // What the live tool said, as the SDK shows a plain tool's object result (JSON), untouched by readback.
    expect(shownOnSecondCall(model)).toEqual({ type: 'json', value: { ok: true, version: 2 } });
    // No completion reaches the SDK result: nothing there can be read as proof.
    expect(completionsOf(result)).toEqual([]);
    expect((await hd.tickets.get('T-104'))?.status).not.toBe('resolved');
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
  });

  it("a thrown live-tool error reaches the model as the SDK's tool error, and the record keeps it", async () => {
    const { hd, runner } = shadowHelpdesk();
    hd.tickets.faults.landNextWriteAfterMs = 0;
    const model = scriptedModel('update_ticket', { id: 'T-104', status: 'closed' }, 'It failed.');
    await generateText({
      model,
      tools: { update_ticket: shadowAiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Close T-104.',
    });
    expect(shownOnSecondCall(model)).toMatchObject({
      type: 'error-text',
      value: expect.stringMatching(/ETIMEDOUT|timed out/i),
    });
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.shadow?.claimed).toBe('error');
    // The write landed after the timeout: readback saw it, the tool's error claim disagrees.
    expect(record?.completion?.shadow?.agrees).toBe(false);
  });

  it('aiTool refuses a shadow action, naming shadowAiTool', () => {
    const { hd, runner } = shadowHelpdesk();
    expect(() => aiTool(runner, hd.actions.updateTicket)).toThrow(/shadowAiTool/);
  });

  it('shadowAiTool refuses an action that is not in shadow mode at creation, naming aiTool', () => {
    const hd = createHelpdesk();
    const runner = createRunner({ clock: hd.clock });
    const attempt = () => shadowAiTool(runner, hd.actions.updateTicket);
    expect(attempt).toThrow(expect.objectContaining({ code: 'invalid_options', field: 'action' }));
    expect(attempt).toThrow('action: "update_ticket" is not in shadow mode: use aiTool()');
  });

  it('aiTool, shadowAiTool and aiTools name a missing runner, a non-action, a repeated name and an unknown per-action name', () => {
    const { hd, runner } = shadowHelpdesk();
    const cases: [() => unknown, string][] = [
      [
        () => aiTool(undefined as never, hd.actions.updateTicket),
        'runner: expected a runner made by createRunner()',
      ],
      [
        () => shadowAiTool(null as never, hd.actions.updateTicket),
        'runner: expected a runner made by createRunner()',
      ],
      [() => aiTools(runner, undefined as never), 'actions: expected an array of actions'],
      [
        () => aiTools(runner, [hd.actions.updateTicket, 'x' as never]),
        'actions[1]: expected an action made by defineAction()',
      ],
      [
        () => aiTools(runner, { resolve: hd.actions.updateTicket, reopen: hd.actions.updateTicket }),
        'actions.reopen: the tool name "update_ticket" is also given by actions.resolve',
      ],
      [
        () => aiTools(runner, [hd.actions.sendEmail], { actions: { send_emial: { wait: false } } }),
        'options.actions.send_emial: no listed action is named "send_emial" (listed: send_email)',
      ],
    ];
    for (const [attempt, message] of cases) {
      expect(attempt).toThrow(expect.objectContaining({ name: 'ReadbackError', code: 'invalid_options' }));
      expect(attempt).toThrow(message);
    }
  });
});
