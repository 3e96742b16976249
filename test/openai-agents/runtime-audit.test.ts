import { Agent, Runner } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callbackSink, createRunner, defineAction, type TraceEvent } from '../../src/index.js';
import { agentTool, agentTools, completionsOf } from '../../src/openai-agents/index.js';
import { helpdesk } from '../support/helpdesk.js';
import './support.js';

const scope = { tenant: 'acme' };

describe('readback/openai-agents at run time (audit)', () => {
  it("passes the SDK's call id to the run, so the trace and gen_ai.tool.call.id carry the model's id", async () => {
    const events: TraceEvent[] = [];
    const { hd, runner } = helpdesk({ trace: { sinks: [callbackSink((e) => void events.push(e))] } });
    const model = new ScriptedModel([
      [functionCall('update_ticket', { id: 'T-104', status: 'resolved' }, { callId: 'call_oa_9' })],
      [assistantMessage('ok')],
    ]);
    const agent = new Agent({
      name: 'a',
      model,
      tools: [agentTool(runner, hd.actions.updateTicket, { scope })],
    });
    await new Runner({ tracingDisabled: true }).run(agent, 'go');
    const started = events.find((e) => e.type === 'run.started');
    expect(started).toMatchObject({ toolCallId: 'call_oa_9', callId: 'call_oa_9' });
  });

  it('two identical calls in one turn join one operation; each output item carries it', async () => {
    const { hd, runner } = helpdesk();
    const input = { id: 'T-104', status: 'resolved' };
    const model = new ScriptedModel([
      [
        functionCall('update_ticket', input, { callId: 'c1' }),
        functionCall('update_ticket', input, { callId: 'c2' }),
      ],
      [assistantMessage('ok')],
    ]);
    const agent = new Agent({
      name: 'a',
      model,
      tools: agentTools(runner, [hd.actions.updateTicket], { scope }),
    });
    const result = await new Runner({ tracingDisabled: true }).run(agent, 'go');
    const completions = completionsOf(result);
    expect(completions).toHaveLength(2);
    expect(completions[0]?.operationId).toBe(completions[1]?.operationId);
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('a run aborted mid-execute reaches ctx.signal; the operation is not verified', async () => {
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
      observe: async () => null,
      expect: () => ({ written: true }),
      maxInFlightMs: 0,
    });
    const runner = createRunner();
    const model = new ScriptedModel([
      [functionCall('slow_write', { id: 'a' }, { callId: 'c1' })],
      [assistantMessage('ok')],
    ]);
    const agent = new Agent({ name: 'a', model, tools: [agentTool(runner, action)] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 20);
    await new Runner({ tracingDisabled: true })
      .run(agent, 'go', { signal: controller.signal })
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 20));
    expect(sawAbort).toBe(true);
    const records = await runner.store.list();
    expect(records).toHaveLength(1);
    expect(records[0]?.completion?.status).not.toBe('verified');
  });

  it('a scope option that throws: the model is not told its arguments were wrong', async () => {
    const { hd, runner } = helpdesk();
    const model = new ScriptedModel([
      [functionCall('update_ticket', { id: 'T-104', status: 'resolved' }, { callId: 'c1' })],
      [assistantMessage('ok')],
    ]);
    const scopeOf = () => {
      throw new Error('no tenant for this user');
    };
    const agent = new Agent({
      name: 'a',
      model,
      tools: [agentTool(runner, hd.actions.updateTicket, { scope: scopeOf })],
    });
    await new Runner({ tracingDisabled: true }).run(agent, 'go');
    const shown = JSON.stringify(model.calls[1]?.request.input);
    expect(shown).toContain('[not executed]');
    expect(shown).not.toContain('arguments were rejected');
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a wrapped runner that rejects with a non-object fails the run instead of telling the model nothing ran', async () => {
    const { hd, runner } = helpdesk();
    const wrapped = { ...runner, run: () => Promise.reject('store exploded') };
    const model = new ScriptedModel([
      [functionCall('update_ticket', { id: 'T-104', status: 'resolved' }, { callId: 'c1' })],
      [assistantMessage('ok')],
    ]);
    const agent = new Agent({
      name: 'a',
      model,
      tools: [agentTool(wrapped, hd.actions.updateTicket, { scope })],
    });
    await expect(new Runner({ tracingDisabled: true }).run(agent, 'go')).rejects.toThrow('store exploded');
    expect(model.calls).toHaveLength(1);
  });
});
