import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiTool, aiTools, completionsOf } from '../../src/ai-sdk/index.js';
import { callbackSink, createRunner, defineAction, type TraceEvent } from '../../src/index.js';
import { helpdesk } from '../support/helpdesk.js';
import { answerStep, callStep } from './support.js';

const scope = { tenant: 'acme' };
type Step = ReturnType<typeof callStep>;

function twoCallStep(toolName: string, input: unknown, ids: [string, string]): Step {
  const one = callStep(toolName, input, ids[0]);
  const two = callStep(toolName, input, ids[1]);
  return { ...one, content: [...one.content, ...two.content] };
}

describe('readback/ai-sdk at run time (audit)', () => {
  it("passes the SDK's tool call id to the run, so the trace and gen_ai.tool.call.id carry the model's id", async () => {
    const events: TraceEvent[] = [];
    const { hd, runner } = helpdesk({ trace: { sinks: [callbackSink((e) => void events.push(e))] } });
    const model = new MockLanguageModelV3({
      doGenerate: [
        callStep('update_ticket', { id: 'T-104', status: 'resolved' }, 'call_model_7'),
        answerStep('ok'),
      ],
    });
    await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Resolve T-104.',
    });
    const started = events.find((e) => e.type === 'run.started');
    expect(started).toMatchObject({ toolCallId: 'call_model_7', callId: 'call_model_7' });
  });

  it('two identical calls in one step join one operation (as documented): one write, two results', async () => {
    const { hd, runner } = helpdesk();
    const model = new MockLanguageModelV3({
      doGenerate: [
        twoCallStep('update_ticket', { id: 'T-104', status: 'resolved' }, ['c1', 'c2']),
        answerStep('ok'),
      ],
    });
    const result = await generateText({
      model,
      tools: aiTools(runner, [hd.actions.updateTicket], { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Resolve T-104.',
    });
    const completions = completionsOf(result);
    expect(completions).toHaveLength(2);
    expect(completions[0]?.operationId).toBe(completions[1]?.operationId);
    expect(completions.map((c) => c.status)).toEqual(['verified', 'verified']);
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('an abortSignal that fires mid-execute reaches ctx.signal; the run is never verified and nothing is left unhandled', async () => {
    const landed = false;
    let sawAbort = false;
    const action = defineAction({
      name: 'slow_write',
      description: 'A write that waits for its signal.',
      input: z.object({ id: z.string() }),
      target: (i) => `thing:${i.id}`,
      postcondition: 'The thing is written.',
      execute: (_i, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(ctx.signal.reason);
          });
        }),
      observe: async () => (landed ? { written: true } : null),
      expect: () => ({ written: true }),
      maxInFlightMs: 0,
    });
    const runner = createRunner();
    const controller = new AbortController();
    const tools = { slow_write: aiTool(runner, action) };
    let settled: Promise<unknown> | undefined;
    const wrapped = {
      ...tools.slow_write,
      execute: (input: unknown, options: unknown) => {
        settled = (tools.slow_write.execute as (i: unknown, o: unknown) => Promise<unknown>)(input, options);
        setTimeout(() => controller.abort(new Error('user pressed stop')), 5);
        return settled;
      },
    };
    const model = new MockLanguageModelV3({
      doGenerate: [callStep('slow_write', { id: 'a' }), answerStep('x')],
    });
    await generateText({
      model,
      tools: { slow_write: wrapped as typeof tools.slow_write },
      stopWhen: stepCountIs(3),
      prompt: 'go',
      abortSignal: controller.signal,
    }).catch(() => undefined);
    expect(sawAbort).toBe(true);
    const completion = (await settled) as { status: string };
    expect(completion.status).not.toBe('verified');
  });
});
