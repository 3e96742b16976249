// Who validates the model's arguments: by default readback (so an invalid call reaches the runner, is recorded
// and answered with invalid_input), or, with `inputValidation: 'sdk'`, the AI SDK itself (as before).
import { asSchema, generateText, simulateReadableStream, stepCountIs, streamText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiTool, aiTools, completionsOf } from '../../src/ai-sdk/index.js';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { completionText } from '../../src/integrations/text.js';
import { assignTicket, helpdesk, oneTicket } from '../support/helpdesk.js';
import { onlyCompletion, scriptedModel, shownOnSecondCall } from './support.js';

const scope = { tenant: 'acme' };

/** An assign_ticket action with a zod schema whose refinement counts how often the input is validated. */
function counted(options: { shadow?: boolean } = {}) {
  const { clock, tickets } = oneTicket();
  const events: TraceEvent[] = [];
  const runner = createRunner({
    clock,
    trace: { sinks: [callbackSink((e) => void events.push(e))] },
    ...(options.shadow ? { shadow: true } : {}),
  });
  const calls = { validate: 0 };
  const schema = z.object({ id: z.string(), assignee: z.string().min(1) }).refine(() => {
    calls.validate += 1;
    return true;
  });
  return { tickets, events, runner, calls, schema, action: assignTicket(tickets, schema) };
}

const selected = (events: TraceEvent[]) => events.filter((e) => e.type === 'tool.selected');

describe('readback/ai-sdk input validation (audit)', () => {
  it('zod, invalid arguments: the call reaches readback, is recorded valid:false with its issues, the model is shown invalid_input, nothing runs', async () => {
    const { tickets, events, runner, action } = counted();
    const model = scriptedModel('assign_ticket', { id: 'T-1', assignee: '' }, 'I could not assign it.');
    const result = await generateText({
      model,
      tools: { assign_ticket: aiTool(runner, action, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(c.reason).toMatch(/^assignee: /);
    expect(selected(events)).toEqual([
      expect.objectContaining({
        tool: 'assign_ticket',
        valid: false,
        issues: [expect.stringMatching(/^assignee: /)],
      }),
    ]);
    const shown = shownOnSecondCall(model);
    expect(shown).toEqual({ type: 'error-text', value: completionText(c) });
    expect(shown).toMatchObject({ value: expect.stringContaining('assignee: ') });
    expect(result.steps[0]?.content.some((part) => part.type === 'tool-error')).toBe(false);
    expect(tickets.writes).toEqual([]);
    expect(await tickets.get('T-1')).toMatchObject({ id: 'T-1', assignee: null });
  });

  it('zod, a valid call is validated once (by readback) and the model is listed the JSON Schema the SDK derives', async () => {
    const { tickets, runner, calls, schema, action } = counted();
    const model = scriptedModel('assign_ticket', { id: 'T-1', assignee: 'ana' }, 'Assigned.');
    const result = await generateText({
      model,
      tools: { assign_ticket: aiTool(runner, action, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1 to ana.',
    });
    expect(onlyCompletion(completionsOf(result)).status).toBe('verified');
    expect((await tickets.get('T-1'))?.assignee).toBe('ana');
    expect(calls.validate).toBe(1);
    expect(model.doGenerateCalls[0]?.tools?.[0]).toMatchObject({
      inputSchema: await asSchema(schema).jsonSchema,
    });
  });

  it('streamText: an invalid call is answered by readback the same way', async () => {
    const { tickets, events, runner, action } = counted();
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const model = new MockLanguageModelV3({
      doStream: [
        {
          stream: simulateReadableStream({
            chunks: [
              { type: 'tool-call', toolCallId: 'c1', toolName: 'assign_ticket', input: '{"id":"T-1"}' },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
            ],
          }),
        },
        {
          stream: simulateReadableStream({
            chunks: [
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: 'Not assigned.' },
              { type: 'text-end', id: 't' },
              { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
            ],
          }),
        },
      ],
    });
    const result = streamText({
      model,
      tools: aiTools(runner, [action], { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1.',
    });
    const steps = await result.steps;
    const c = onlyCompletion(completionsOf({ steps }));
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(selected(events)).toEqual([
      expect.objectContaining({ valid: false, issues: [expect.stringMatching(/^assignee: /)] }),
    ]);
    expect(tickets.writes).toEqual([]);
  });

  it("inputValidation: 'sdk' keeps the SDK's own rejection: a tool-error, no run, no record, and repairToolCall gets the call", async () => {
    const { tickets, events, runner, action } = counted();
    const model = scriptedModel('assign_ticket', { id: 'T-1', assignee: '' }, 'I could not assign it.');
    const repaired: unknown[] = [];
    const result = await generateText({
      model,
      tools: { assign_ticket: aiTool(runner, action, { scope, inputValidation: 'sdk' }) },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1.',
      experimental_repairToolCall: async ({ error }) => {
        repaired.push(error.name);
        return null;
      },
    });
    expect(repaired).toEqual(['AI_InvalidToolInputError']);
    expect(completionsOf(result)).toEqual([]);
    expect(events).toEqual([]);
    const errors = result.steps[0]?.content.filter((part) => part.type === 'tool-error') ?? [];
    expect(errors).toHaveLength(1);
    expect(shownOnSecondCall(model)).toMatchObject({
      type: 'error-text',
      value: expect.stringContaining('Invalid input for tool assign_ticket'),
    });
    expect(tickets.writes).toEqual([]);
  });

  it("inputValidation: 'sdk' also has the SDK validate a non-zod schema (so repairToolCall can fix it)", async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('update_ticket', { id: 'T-104', status: 'bogus' }, 'Resolved.');
    const result = await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope, inputValidation: 'sdk' }) },
      stopWhen: stepCountIs(3),
      prompt: 'Resolve T-104.',
      experimental_repairToolCall: async ({ toolCall }) => ({
        ...toolCall,
        input: JSON.stringify({ id: 'T-104', status: 'resolved' }),
      }),
    });
    expect(onlyCompletion(completionsOf(result)).status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
  });

  it('shadowAiTool (through aiTools): an invalid call is recorded and the model is shown that nothing ran', async () => {
    const { tickets, events, runner, action } = counted({ shadow: true });
    const model = scriptedModel('assign_ticket', { id: 'T-1', assignee: '' }, 'I could not assign it.');
    await generateText({
      model,
      tools: aiTools(runner, [action], { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1.',
    });
    expect(selected(events)).toEqual([
      expect.objectContaining({ valid: false, issues: [expect.stringMatching(/^assignee: /)] }),
    ]);
    expect(shownOnSecondCall(model)).toMatchObject({
      type: 'error-text',
      value: expect.stringMatching(/^\[not executed: invalid_input\] assignee: /),
    });
    expect(tickets.writes).toEqual([]);
  });

  it('refuses an unknown inputValidation value', () => {
    const { runner, action } = counted();
    const attempt = () => aiTool(runner, action, { inputValidation: 'zod' as never });
    expect(attempt).toThrow(expect.objectContaining({ code: 'invalid_options', field: 'inputValidation' }));
  });
});
