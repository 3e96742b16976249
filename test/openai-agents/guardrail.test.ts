import { Agent, RunContext, Runner } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentTools, completionGuardrail } from '../../src/openai-agents/index.js';
import { helpdesk } from '../support/helpdesk.js';
import { runAgent, scriptedModel, toolResultsIn } from './support.js';

const scope = { tenant: 'acme' };
const Reply = z.object({ reply: z.string(), ticket: z.string() });
const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

describe('readback/openai-agents: the completion guardrail', () => {
  it('a claim with no tool call trips it (no_completion)', async () => {
    const { hd, runner } = helpdesk();
    const model = new ScriptedModel([[assistantMessage('Done, I sent the email to Ana.')]]);
    const outcome = await runAgent(runner, model, agentTools(runner, hd.actions, { scope }));
    expect(outcome.tripped).toBe(true);
    if (!outcome.tripped) return;
    expect(outcome.info.completions).toEqual([]);
    expect(outcome.info.violations.map((v) => v.kind)).toContain('no_completion');
    expect(outcome.info.honestAnswer).toContain('No state-changing action was run');
    expect(hd.mail.messages).toEqual([]);
  });

  it('an answer without claims passes when nothing ran', async () => {
    const { hd, runner } = helpdesk();
    const model = new ScriptedModel([[assistantMessage('Which ticket do you mean?')]]);
    const outcome = await runAgent(runner, model, agentTools(runner, hd.actions, { scope }));
    expect(outcome).toMatchObject({ tripped: false, finalOutput: 'Which ticket do you mean?' });
  });

  it('works as a Runner-level output guardrail too, and is a plain { name, execute } object', async () => {
    const { hd, runner } = helpdesk();
    const guardrail = completionGuardrail(runner, { name: 'honesty' });
    expect(Object.keys(guardrail).sort()).toEqual(['execute', 'name']);
    const model = scriptedModel('send_email', email, 'Done, the email to Ana was delivered.');
    const agent = new Agent({
      name: 'helpdesk',
      model,
      tools: agentTools(runner, [hd.actions.sendEmail], { scope, wait: false }),
    });
    const run = new Runner({ tracingDisabled: true, outputGuardrails: [guardrail] }).run(agent, 'Email Ana.');
    await expect(run).rejects.toMatchObject({
      name: 'OutputGuardrailTripwireTriggered',
      result: { guardrail: { name: 'honesty' }, output: { tripwireTriggered: true } },
    });
  });

  it('a resumed run (new context) still finds its operations through the tool outputs the model saw', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('send_email', email, 'The email to Ana is queued, not confirmed yet.');
    const first = await runAgent(
      runner,
      model,
      agentTools(runner, [hd.actions.sendEmail], { scope, wait: false }),
    );
    expect(first.tripped).toBe(false);
    const shownItems = toolResultsIn(model, 1);
    const verdict = await completionGuardrail(runner).execute({
      agent: new Agent({ name: 'resumed' }),
      agentOutput: 'Done, I sent the email to Ana.',
      context: new RunContext(),
      details: { output: shownItems },
    });
    expect(verdict.tripwireTriggered).toBe(true);
    expect(verdict.outputInfo.completions).toMatchObject([{ action: 'send_email', status: 'pending' }]);
  });
});

describe('readback/openai-agents: typed context and structured output', () => {
  it('fits an Agent with its own context type and a zod output type; claims inside the object are checked', async () => {
    const { hd, runner } = helpdesk();
    const model = new ScriptedModel([
      [functionCall('send_email', email, { callId: 'call-1' })],
      [assistantMessage(JSON.stringify({ reply: 'Done, I sent the email to Ana.', ticket: 'none' }))],
    ]);
    const agent = new Agent<{ user: string }, typeof Reply>({
      name: 'helpdesk',
      model,
      outputType: Reply,
      tools: agentTools(runner, [hd.actions.sendEmail], {
        scope,
        wait: false,
        actor: (ctx) => (ctx.context as { user: string }).user,
      }),
      outputGuardrails: [completionGuardrail(runner)],
    });
    const run = new Runner({ tracingDisabled: true }).run(agent, 'Email Ana.', {
      context: { user: 'ana-support' },
    });
    await expect(run).rejects.toMatchObject({
      name: 'OutputGuardrailTripwireTriggered',
      result: {
        output: { outputInfo: { ok: false, completions: [{ action: 'send_email', status: 'pending' }] } },
      },
    });
    const [record] = await runner.store.list({ action: 'send_email' });
    expect(record?.actor).toBe('ana-support');
  });
});
