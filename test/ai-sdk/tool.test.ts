import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiTool, aiTools, checkAnswer, completionsOf, modelOutput } from '../../src/ai-sdk/index.js';
import { createRunner, type RunContext, type Runner } from '../../src/index.js';
import { completionText } from '../../src/integrations/text.js';
import { assignTicket, helpdesk, oneTicket } from '../support/helpdesk.js';
import { answerStep, callStep, onlyCompletion, scriptedModel, shownOnSecondCall } from './support.js';

const scope = { tenant: 'acme' };
const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

describe('readback/ai-sdk with generateText and MockLanguageModelV3', () => {
  it('verified: the ticket really changed, and the model is shown a text output that says verified', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-104', status: 'resolved' },
      'Ticket T-104 is resolved.',
    );
    const result = await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Resolve ticket T-104.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    const shown = shownOnSecondCall(model);
    expect(shown).toEqual({ type: 'text', value: completionText(c) });
    expect(shown).toMatchObject({ value: expect.stringMatching(/^\[status: verified\] Verified: /) });
    expect(result.text).toBe('Ticket T-104 is resolved.');
    expect(checkAnswer(result.text, completionsOf(result)).ok).toBe(true);
  });

  it('soft-failed write: the model is shown an error-text output naming failed; a success claim is rejected', async () => {
    const { hd, runner } = helpdesk();
    hd.tickets.faults.softFailNextWrite = true;
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-104', status: 'resolved' },
      'Done, T-104 is resolved.',
    );
    const result = await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Resolve ticket T-104.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('readback_mismatch');
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    const shown = shownOnSecondCall(model);
    expect(shown).toEqual({ type: 'error-text', value: completionText(c) });
    expect(shown).toMatchObject({
      value: expect.stringMatching(/^\[status: failed, errorCode: readback_mismatch, next: repair\]/),
    });
    const verdict = checkAnswer(result.text, completionsOf(result));
    expect(verdict.ok).toBe(false);
    expect(verdict.violations[0]).toMatchObject({ kind: 'unverified_claim', status: 'failed' });
  });

  it('pending (wait: false send_email): shown as text saying not verified; "Done, I sent it" is rejected, an honest answer passes', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('send_email', email, 'Done, I sent it.');
    const result = await generateText({
      model,
      tools: aiTools(runner, [hd.actions.sendEmail], { scope, wait: false }),
      stopWhen: stepCountIs(3),
      prompt: 'Email Ana the proposal.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('pending');
    expect(c.nextAllowedAction).toBe('poll');
    const shown = shownOnSecondCall(model);
    expect(shown).toEqual({ type: 'text', value: completionText(c) });
    expect(shown).toMatchObject({
      value: expect.stringMatching(/^\[status: pending, errorCode: in_progress, next: poll\]/),
    });
    expect((shown as { value: string }).value).toContain('not verified');

    const overclaim = checkAnswer(result.text, completionsOf(result));
    expect(overclaim.ok).toBe(false);
    // "Done, I sent it" names nothing, and the run's one action is not verified.
    expect(overclaim.violations[0]).toMatchObject({ kind: 'unattributed_claim' });
    expect(overclaim.violations[0]?.detail).toContain('1 of 1 actions are not verified');
    // Naming the email does not make the claim true: it is matched to the pending completion.
    const named = checkAnswer('I sent the email to ana@example.com.', completionsOf(result));
    expect(named.ok).toBe(false);
    expect(named.violations[0]).toMatchObject({
      kind: 'unverified_claim',
      status: 'pending',
      action: 'send_email',
      operationId: c.operationId,
    });
    const honest = checkAnswer(
      'The email to ana@example.com is queued with the provider but not confirmed yet; I will check on it.',
      completionsOf(result),
    );
    expect(honest).toEqual({ ok: true, violations: [] });

    // The operation settles later through the runner.
    hd.clock.advance(hd.mail.deliveryDelayMs);
    expect((await runner.poll(c.operationId)).status).toBe('verified');
  });

  it('dropped email (waiting): failed, shown as error-text', async () => {
    const { hd, runner } = helpdesk();
    hd.mail.faults.nextOutcome = 'dropped';
    const model = scriptedModel('send_email', email, 'The email could not be delivered.');
    const result = await generateText({
      model,
      tools: aiTools(runner, hd.actions, { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Email Ana the proposal.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('provider_failed');
    expect(shownOnSecondCall(model)).toEqual({ type: 'error-text', value: completionText(c) });
  });

  it('stuck email: unknown, shown as error-text saying it may be polled', async () => {
    const { hd, runner } = helpdesk();
    hd.mail.faults.nextOutcome = 'stuck';
    const model = scriptedModel('send_email', email, 'I could not confirm the email yet.');
    const result = await generateText({
      model,
      tools: aiTools(runner, hd.actions, { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Email Ana the proposal.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('unknown');
    expect(shownOnSecondCall(model)).toEqual({ type: 'error-text', value: completionText(c) });
    expect(completionText(c)).toMatch(/^\[status: unknown, errorCode: poll_budget_exhausted, next: poll\]/);
  });

  it('no_op: the ticket already held; shown as text, not an error', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-105', status: 'resolved' },
      'T-105 was already resolved.',
    );
    const result = await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Resolve ticket T-105.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('no_op');
    expect(hd.tickets.writes).toEqual([]);
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', value: completionText(c) });
  });

  it('invalid input to a non-zod schema: readback validates it, the model is shown failed invalid_input', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('update_ticket', { id: 'T-104', status: 'bogus' }, 'I could not update it.');
    const result = await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Set T-104 to bogus.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(shownOnSecondCall(model)).toEqual({ type: 'error-text', value: completionText(c) });
    expect(hd.tickets.writes).toEqual([]);
    // The non-zod schema is listed to the model as an open object.
    expect(model.doGenerateCalls[0]?.tools?.[0]).toMatchObject({
      type: 'function',
      name: 'update_ticket',
      inputSchema: { type: 'object', additionalProperties: true },
    });
    expect((model.doGenerateCalls[0]?.tools?.[0] as { description?: string }).description).toContain(
      'The ticket has the requested status, written by this operation.',
    );
  });

  it('a claim with no tool call is rejected by checkAnswer', async () => {
    const { hd, runner } = helpdesk();
    const model = new MockLanguageModelV3({ doGenerate: [answerStep('Done, I sent the email to Ana.')] });
    const result = await generateText({
      model,
      tools: aiTools(runner, hd.actions, { scope }),
      stopWhen: stepCountIs(3),
      prompt: 'Email Ana.',
    });
    expect(completionsOf(result)).toEqual([]);
    const verdict = checkAnswer(result.text, completionsOf(result));
    expect(verdict.ok).toBe(false);
    expect(verdict.violations.map((v) => v.kind)).toContain('no_completion');
  });

  it('a repeated call in one run joins the first operation instead of writing twice', async () => {
    const { hd, runner } = helpdesk();
    const input = { id: 'T-104', status: 'resolved' };
    const model = new MockLanguageModelV3({
      doGenerate: [
        callStep('update_ticket', input, 'call-1'),
        callStep('update_ticket', input, 'call-2'),
        answerStep('ok'),
      ],
    });
    const result = await generateText({
      model,
      tools: { update_ticket: aiTool(runner, hd.actions.updateTicket, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Resolve T-104.',
    });
    const [first, second] = completionsOf(result);
    expect(first?.operationId).toBe(second?.operationId);
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('zod input: the SDK lists the JSON schema; scope, runId and actor are derived per call; the abort signal reaches the run', async () => {
    const { clock, tickets } = oneTicket();
    const assign = assignTicket(tickets, z.object({ id: z.string(), assignee: z.string().min(1) }));
    const inner = createRunner({ clock });
    const contexts: RunContext[] = [];
    const runner: Runner = {
      ...inner,
      run: (action, input, ctx) => {
        contexts.push(ctx);
        return inner.run(action, input, ctx);
      },
    };
    const controller = new AbortController();
    const seen: string[] = [];
    const model = scriptedModel('assign_ticket', { id: 'T-1', assignee: 'ana' }, 'Assigned T-1 to ana.');
    const result = await generateText({
      model,
      abortSignal: controller.signal,
      tools: {
        assign_ticket: aiTool(runner, assign, {
          scope: () => ({ tenant: 'acme' }),
          runId: (o) => {
            seen.push(o.toolCallId);
            return 'conversation-7';
          },
          actor: () => 'agent:helpdesk',
        }),
      },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1 to ana.',
    });
    const c = onlyCompletion(completionsOf(result));
    expect(c.status).toBe('verified');
    expect(c.idempotencyKey.startsWith('conversation-7:assign_ticket:')).toBe(true);
    expect(seen).toEqual(['call-1']);
    expect((await tickets.get('T-1'))?.assignee).toBe('ana');
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toMatchObject({
      runId: 'conversation-7',
      scope: { tenant: 'acme' },
      actor: 'agent:helpdesk',
    });
    // The run gets the tool call's abortSignal, which follows generateText's.
    const signal = contexts[0]?.signal;
    expect(signal?.aborted).toBe(false);
    controller.abort();
    expect(signal?.aborted).toBe(true);
    expect(model.doGenerateCalls[0]?.tools?.[0]).toMatchObject({
      inputSchema: { type: 'object', properties: { id: { type: 'string' }, assignee: { type: 'string' } } },
    });
    expect(checkAnswer(result.text, completionsOf(result)).ok).toBe(true);
  });
});

describe('modelOutput', () => {
  it('marks failed and unknown as errors and everything else as text, always with the status in words', () => {
    const base = {
      action: 'a',
      target: 't',
      operationId: 'op_1',
      idempotencyKey: 'k',
      attempt: 1,
      postcondition: 'p',
      mode: 'committed' as const,
      checks: [],
      nextAllowedAction: 'none' as const,
      safeToRepeat: false,
      message: 'm',
    };
    for (const status of ['verified', 'pending', 'failed', 'partial', 'no_op', 'unknown'] as const) {
      const out = modelOutput({ ...base, status });
      expect(out.type).toBe(status === 'failed' || status === 'unknown' ? 'error-text' : 'text');
      expect(out).toMatchObject({ value: `[status: ${status}] m (operation op_1)` });
    }
  });
});
