// The same adapter against ai 7 (installed as the alias `ai7`): every `ai` import of src/ai-sdk is
// redirected to ai 7 here, so its own `tool()`, `generateText` and `MockLanguageModelV4` run the tools.
import { generateText, stepCountIs, type ToolSet } from 'ai7';
import { MockLanguageModelV4 } from 'ai7/test';
import { describe, expect, it, vi } from 'vitest';
import { aiTool, aiTools, checkAnswer, completionsOf } from '../../src/ai-sdk/index.js';
import { completionText } from '../../src/integrations/text.js';
import { helpdesk } from '../support/helpdesk.js';
import { onlyCompletion } from './support.js';

vi.mock('ai', async () => await import('ai7'));

// The adapter's declared types come from whichever `ai` the user installed; in this repo that is ai 6, so
// its tools are typed as ai 6 tools. `tsconfig.ai7.json` type-checks the adapter against ai 7 itself.
const asV7 = (tools: unknown): ToolSet => tools as ToolSet;

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;
type Prompt = MockLanguageModelV4['doGenerateCalls'][number]['prompt'];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};
const scope = { tenant: 'acme' };
const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

function scripted(toolName: string, input: unknown, answer: string): MockLanguageModelV4 {
  const call: GenerateResult = {
    content: [{ type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
  const text: GenerateResult = {
    content: [{ type: 'text', text: answer }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
  return new MockLanguageModelV4({ doGenerate: [call, text] });
}

function shownOnSecondCall(model: MockLanguageModelV4) {
  expect(model.doGenerateCalls).toHaveLength(2);
  const prompt: Prompt = model.doGenerateCalls[1]!.prompt;
  const results = prompt.flatMap((m) =>
    m.role === 'tool' ? m.content.filter((part) => part.type === 'tool-result') : [],
  );
  expect(results).toHaveLength(1);
  return results[0]?.output;
}

describe('readback/ai-sdk with ai 7 (generateText and MockLanguageModelV4)', () => {
  it('runs on ai 7 itself, not on the ai 6 the rest of the suite uses', async () => {
    const ai = await import('ai');
    expect(ai.generateText).toBe(generateText);
  });

  it('verified: the ticket changed, and the model is shown text saying verified', async () => {
    const { hd, runner } = helpdesk();
    const model = scripted('update_ticket', { id: 'T-104', status: 'resolved' }, 'Ticket T-104 is resolved.');
    const result = await generateText({
      model,
      tools: asV7({ update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) }),
      stopWhen: stepCountIs(3),
      prompt: 'Resolve ticket T-104.',
    });
    const c = onlyCompletion(completionsOf(result as never));
    expect(c.status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', value: completionText(c) });
    expect(checkAnswer(result.text, [c]).ok).toBe(true);
  });

  it('soft-failed write: failed, shown as error-text; the success claim is rejected', async () => {
    const { hd, runner } = helpdesk();
    hd.tickets.faults.softFailNextWrite = true;
    const model = scripted('update_ticket', { id: 'T-104', status: 'resolved' }, 'Done, T-104 is resolved.');
    const result = await generateText({
      model,
      tools: asV7({ update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) }),
      stopWhen: stepCountIs(3),
      prompt: 'Resolve ticket T-104.',
    });
    const c = onlyCompletion(completionsOf(result as never));
    expect(c).toMatchObject({ status: 'failed', errorCode: 'readback_mismatch' });
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    expect(shownOnSecondCall(model)).toEqual({ type: 'error-text', value: completionText(c) });
    expect(checkAnswer(result.text, [c]).ok).toBe(false);
  });

  it('pending (wait: false): shown as text that says not verified; "Done, I sent it" is rejected', async () => {
    const { hd, runner } = helpdesk();
    const model = scripted('send_email', email, 'Done, I sent it.');
    const result = await generateText({
      model,
      tools: asV7(aiTools(runner, [hd.actions.sendEmail], { scope, wait: false })),
      stopWhen: stepCountIs(3),
      prompt: 'Email Ana the proposal.',
    });
    const c = onlyCompletion(completionsOf(result as never));
    expect(c.status).toBe('pending');
    // Accepted by the provider, delivered to no one yet: exactly what pending says.
    expect(hd.mail.inbox('ana@example.com')).toEqual([]);
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', value: completionText(c) });
    expect(completionText(c)).toMatch(/^\[status: pending/);
    expect(checkAnswer(result.text, [c]).ok).toBe(false);
  });

  it('stuck email: unknown, shown as error-text', async () => {
    const { hd, runner } = helpdesk();
    hd.mail.faults.nextOutcome = 'stuck';
    const model = scripted('send_email', email, 'I could not confirm the email yet.');
    const result = await generateText({
      model,
      tools: asV7(aiTools(runner, hd.actions, { scope })),
      stopWhen: stepCountIs(3),
      prompt: 'Email Ana the proposal.',
    });
    const c = onlyCompletion(completionsOf(result as never));
    expect(c.status).toBe('unknown');
    expect(shownOnSecondCall(model)).toEqual({ type: 'error-text', value: completionText(c) });
  });
});
