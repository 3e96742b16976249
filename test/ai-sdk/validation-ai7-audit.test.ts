// The input-validation choice against ai 7 (installed as the alias `ai7`), whose tool-call parsing is its own.
import { asSchema, generateText, stepCountIs, type ToolSet } from 'ai7';
import { MockLanguageModelV4 } from 'ai7/test';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { aiTool, completionsOf } from '../../src/ai-sdk/index.js';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';
import { onlyCompletion } from './support.js';

vi.mock('ai', async () => await import('ai7'));

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};

function scripted(input: unknown): MockLanguageModelV4 {
  const call: GenerateResult = {
    content: [
      { type: 'tool-call', toolCallId: 'c1', toolName: 'assign_ticket', input: JSON.stringify(input) },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
  const text: GenerateResult = {
    content: [{ type: 'text', text: 'ok' }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
  return new MockLanguageModelV4({ doGenerate: [call, text] });
}

function setup() {
  const { clock, tickets } = oneTicket();
  const events: TraceEvent[] = [];
  const runner = createRunner({ clock, trace: { sinks: [callbackSink((e) => void events.push(e))] } });
  const calls = { validate: 0 };
  const schema = z.object({ id: z.string(), assignee: z.string().min(1) }).refine(() => {
    calls.validate += 1;
    return true;
  });
  return { tickets, events, runner, calls, schema, action: assignTicket(tickets, schema) };
}

describe('readback/ai-sdk input validation on ai 7 (audit)', () => {
  it('an invalid zod call reaches readback and is recorded; a valid one is validated once', async () => {
    const { tickets, events, runner, action } = setup();
    const model = scripted({ id: 'T-1', assignee: '' });
    const result = await generateText({
      model,
      tools: { assign_ticket: aiTool(runner, action, { scope: { tenant: 'acme' } }) } as unknown as ToolSet,
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1.',
    });
    expect(onlyCompletion(completionsOf(result as never))).toMatchObject({ errorCode: 'invalid_input' });
    expect(events.filter((e) => e.type === 'tool.selected')).toEqual([
      expect.objectContaining({ valid: false, issues: [expect.stringMatching(/^assignee: /)] }),
    ]);
    expect(tickets.writes).toEqual([]);

    const ok = setup();
    const okModel = scripted({ id: 'T-1', assignee: 'ana' });
    await generateText({
      model: okModel,
      tools: {
        assign_ticket: aiTool(ok.runner, ok.action, { scope: { tenant: 'acme' } }),
      } as unknown as ToolSet,
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1 to ana.',
    });
    expect((await ok.tickets.get('T-1'))?.assignee).toBe('ana');
    expect(ok.calls.validate).toBe(1);
    expect(okModel.doGenerateCalls[0]?.tools?.[0]).toMatchObject({
      inputSchema: await asSchema(ok.schema).jsonSchema,
    });
  });

  it("inputValidation: 'sdk' keeps ai 7's own rejection: nothing reaches readback", async () => {
    const { events, runner, action } = setup();
    const result = await generateText({
      model: scripted({ id: 'T-1', assignee: '' }),
      tools: {
        assign_ticket: aiTool(runner, action, { scope: { tenant: 'acme' }, inputValidation: 'sdk' }),
      } as unknown as ToolSet,
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1.',
    });
    expect(completionsOf(result as never)).toEqual([]);
    expect(events).toEqual([]);
    expect(result.steps[0]?.content.filter((part) => part.type === 'tool-error')).toHaveLength(1);
  });
});
