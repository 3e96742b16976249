import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { type } from 'arktype';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineAction, guardAnswer } from '../../src/index.js';
import { completionText } from '../../src/integrations/text.js';
import { agentTool, agentTools, completionsOf } from '../../src/openai-agents/index.js';
import { assignTicket, helpdesk, oneTicket } from '../support/helpdesk.js';
import { only, runAgent, scriptedModel, shownOnSecondCall, toolResultsIn } from './support.js';

const scope = { tenant: 'acme' };
const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

/** Asserts the run passed the guardrail and returns its one completion. */
function passed(outcome: Awaited<ReturnType<typeof runAgent>>) {
  if (outcome.tripped) throw new Error(`guardrail tripped: ${JSON.stringify(outcome.info.violations)}`);
  return { finalOutput: outcome.finalOutput, completion: only(completionsOf(outcome)) };
}

describe('readback/openai-agents: what the model is shown, per status (Agent + Runner + ScriptedModel)', () => {
  it('verified: the ticket really changed; the model is shown the verified completion; an honest answer passes', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-104', status: 'resolved' },
      'Ticket T-104 is resolved.',
    );
    const outcome = await runAgent(runner, model, [agentTool(runner, hd.actions.updateTicket, { scope })]);
    const { finalOutput, completion: c } = passed(outcome);
    expect(c.status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(c) });
    expect(completionText(c)).toMatch(/^\[status: verified\] Verified: /);
    expect(finalOutput).toBe('Ticket T-104 is resolved.');
  });

  it('pending (wait: false): shown as not verified; "Done, I sent it" trips the guardrail, with an honest answer to use instead', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('send_email', email, 'Done, I sent it.');
    const outcome = await runAgent(
      runner,
      model,
      agentTools(runner, [hd.actions.sendEmail], { scope, wait: false }),
    );
    expect(outcome.tripped).toBe(true);
    if (!outcome.tripped) return;
    const [op] = outcome.info.completions;
    expect(outcome.info.completions).toHaveLength(1);
    expect(op).toMatchObject({ action: 'send_email', target: 'email:ana@example.com', status: 'pending' });
    expect(outcome.info.violations[0]).toMatchObject({ kind: 'unattributed_claim' });
    // The model was shown the pending completion, in words, not a success.
    const record = await runner.store.get(op?.operationId ?? '');
    const pending = record?.completion;
    if (!pending) throw new Error('no recorded completion');
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(pending) });
    expect(completionText(pending)).toMatch(/^\[status: pending, errorCode: in_progress, next: poll\]/);
    expect(completionText(pending)).toContain('not verified');
    // The email is really only queued, and the suggested answer says so and passes the same guard.
    expect(hd.mail.messages.map((m) => m.status)).toEqual(['queued']);
    expect(guardAnswer(outcome.info.honestAnswer, [pending]).ok).toBe(true);
  });

  it('pending that settles before the answer: the guardrail reads the latest state from the store', async () => {
    const { hd, runner } = helpdesk();
    let operationId = '';
    const model = new ScriptedModel([
      [functionCall('send_email', email, { callId: 'call-1' })],
      {
        type: 'responder',
        respond: async () => {
          // Between the tool result and the answer, the provider delivers and readback reads it back.
          hd.clock.advance(hd.mail.deliveryDelayMs);
          const [record] = await runner.store.list({ action: 'send_email' });
          operationId = record?.id ?? '';
          expect((await runner.poll(operationId)).status).toBe('verified');
          return [assistantMessage('I sent the email to ana@example.com.')];
        },
      },
    ]);
    const outcome = await runAgent(
      runner,
      model,
      agentTools(runner, [hd.actions.sendEmail], { scope, wait: false }),
    );
    expect(outcome.tripped).toBe(false);
    // The model itself was shown `pending`; the answer is allowed because the store now says verified.
    expect((shownOnSecondCall(model) as { text: string }).text).toMatch(/^\[status: pending/);
    expect(hd.mail.messages.map((m) => m.status)).toEqual(['delivered']);
    expect(operationId).not.toBe('');
  });

  it('failed (soft-failed write): shown as failed with readback_mismatch; "Done, T-104 is resolved" trips', async () => {
    const { hd, runner } = helpdesk();
    hd.tickets.faults.softFailNextWrite = true;
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-104', status: 'resolved' },
      'Done, T-104 is resolved.',
    );
    const outcome = await runAgent(runner, model, [agentTool(runner, hd.actions.updateTicket, { scope })]);
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    const shown = shownOnSecondCall(model) as { type: string; text: string };
    expect(shown.type).toBe('text');
    expect(shown.text).toMatch(/^\[status: failed, errorCode: readback_mismatch, next: repair\]/);
    expect(outcome.tripped).toBe(true);
    if (!outcome.tripped) return;
    expect(outcome.info.violations[0]).toMatchObject({ kind: 'unverified_claim', status: 'failed' });
  });

  it('failed (dropped email, waiting): shown as failed provider_failed; an answer that says so passes', async () => {
    const { hd, runner } = helpdesk();
    hd.mail.faults.nextOutcome = 'dropped';
    const model = scriptedModel('send_email', email, 'The email to Ana could not be delivered.');
    const { completion: c } = passed(
      await runAgent(runner, model, agentTools(runner, hd.actions, { scope })),
    );
    expect(c).toMatchObject({ status: 'failed', errorCode: 'provider_failed' });
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(c) });
    expect(hd.mail.messages.map((m) => m.status)).toEqual(['dropped']);
  });

  it('unknown (stuck email): shown as unknown, poll budget exhausted, next: poll', async () => {
    const { hd, runner } = helpdesk();
    hd.mail.faults.nextOutcome = 'stuck';
    const model = scriptedModel('send_email', email, 'I could not confirm the email yet.');
    const { completion: c } = passed(
      await runAgent(runner, model, agentTools(runner, hd.actions, { scope })),
    );
    expect(c.status).toBe('unknown');
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(c) });
    expect(completionText(c)).toMatch(/^\[status: unknown, errorCode: poll_budget_exhausted, next: poll\]/);
  });

  it('partial (one record skipped by the bulk endpoint): shown as partial; "all migrated" trips, exact counts pass', async () => {
    const { hd, runner } = helpdesk();
    const ids = hd.batch.seed(3);
    hd.batch.faults.failIds.add('rec-002');
    const input = { ids, toVersion: 2 };
    const tools = [agentTool(runner, hd.actions.migrateRecords, { scope })];
    const model = scriptedModel('migrate_records', input, 'All 3 records migrated.');
    const outcome = await runAgent(runner, model, tools);
    expect(hd.batch.migrations.map((m) => m.id)).toEqual(['rec-001', 'rec-003']);
    const shown = shownOnSecondCall(model) as { text: string };
    expect(shown.text).toMatch(/^\[status: partial/);
    expect(outcome.tripped).toBe(true);
    if (!outcome.tripped) return;
    expect(outcome.info.completions[0]?.status).toBe('partial');

    // Same run id would join the operation; a fresh runner and helpdesk state keeps this independent.
    const honest = helpdesk();
    const honestIds = honest.hd.batch.seed(3);
    honest.hd.batch.faults.failIds.add('rec-002');
    const model2 = scriptedModel(
      'migrate_records',
      { ids: honestIds, toVersion: 2 },
      '2 of 3 records migrated; rec-002 was not migrated.',
    );
    const tools2 = [agentTool(honest.runner, honest.hd.actions.migrateRecords, { scope })];
    const { completion: c } = passed(await runAgent(honest.runner, model2, tools2));
    expect(c.units).toMatchObject({ required: 3, passed: 2, failed: 1, failedTargets: ['record:rec-002'] });
    expect(shownOnSecondCall(model2)).toEqual({ type: 'text', text: completionText(c) });
  });

  it('no_op: the ticket already held; shown as no_op and nothing was written', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-105', status: 'resolved' },
      'T-105 was already resolved.',
    );
    const { completion: c } = passed(
      await runAgent(runner, model, [agentTool(runner, hd.actions.updateTicket, { scope })]),
    );
    expect(c.status).toBe('no_op');
    expect(hd.tickets.writes).toEqual([]);
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(c) });
    expect(completionText(c)).toMatch(/^\[status: no_op\]/);
  });

  it('invalid input to a non-zod schema: readback validates it; shown failed invalid_input; listed as an open object', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel(
      'update_ticket',
      { id: 'T-104', status: 'bogus' },
      'I could not update T-104.',
    );
    const { completion: c } = passed(
      await runAgent(runner, model, [agentTool(runner, hd.actions.updateTicket, { scope })]),
    );
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(hd.tickets.writes).toEqual([]);
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(c) });
    const listed = model.calls[0]?.request.tools[0];
    expect(listed).toMatchObject({
      type: 'function',
      name: 'update_ticket',
      strict: false,
      parameters: { type: 'object', additionalProperties: true },
    });
    expect((listed as { description: string }).description).toContain(
      'The ticket has the requested status, written by this operation.',
    );
  });
});

describe('readback/openai-agents: runs, input schemas and misuse', () => {
  it('a repeated call in one run joins the first operation; a second run gets its own run id', async () => {
    const { hd, runner } = helpdesk();
    const input = { id: 'T-104', status: 'resolved' };
    const tools = [agentTool(runner, hd.actions.updateTicket, { scope })];
    const model = new ScriptedModel([
      [functionCall('update_ticket', input, { callId: 'call-1' })],
      [functionCall('update_ticket', input, { callId: 'call-2' })],
      [assistantMessage('T-104 is resolved.')],
    ]);
    const outcome = await runAgent(runner, model, tools);
    if (outcome.tripped) throw new Error('tripped');
    const [first, second] = completionsOf(outcome);
    expect(first?.operationId).toBe(second?.operationId);
    expect(hd.tickets.writes).toHaveLength(1);
    // The model saw the same verified completion for both calls.
    expect(toolResultsIn(model, 2).map((r) => (r as { output: { text: string } }).output.text)).toEqual([
      completionText(first as never),
      completionText(first as never),
    ]);
    const again = await runAgent(runner, scriptedModel('update_ticket', input, 'T-104 is resolved.'), tools);
    if (again.tripped) throw new Error('tripped');
    const later = only(completionsOf(again));
    expect(later.status).toBe('no_op');
    expect(later.idempotencyKey.split(':update_ticket:')[0]).not.toBe(
      first?.idempotencyKey.split(':update_ticket:')[0],
    );
  });

  it('zod input: listed strictly; invalid arguments are refused before anything runs; scope, runId and actor per call', async () => {
    const { clock, tickets } = oneTicket();
    const assign = assignTicket(tickets, z.object({ id: z.string(), assignee: z.string().min(1) }));
    const runner = createRunner({ clock });
    const calls: string[] = [];
    const tool = agentTool(runner, assign, {
      scope: () => ({ tenant: 'acme' }),
      runId: (_ctx, call) => {
        calls.push(call.toolCall?.callId ?? '');
        return 'conversation-7';
      },
      actor: () => 'agent:helpdesk',
    });
    const model = new ScriptedModel([
      [functionCall('assign_ticket', { id: 'T-1', assignee: '' }, { callId: 'bad' })],
      [functionCall('assign_ticket', { id: 'T-1', assignee: 'ana' }, { callId: 'good' })],
      [assistantMessage('Assigned T-1 to ana.')],
    ]);
    const outcome = await runAgent(runner, model, [tool]);
    if (outcome.tripped) throw new Error('tripped');
    expect(model.calls[0]?.request.tools[0]).toMatchObject({ name: 'assign_ticket', strict: true });
    // The SDK refused the empty assignee: the model is told nothing ran, and nothing did.
    const [refused] = toolResultsIn(model, 1);
    expect((refused as { output: { text: string } }).output.text).toMatch(
      /^\[not executed: \w+\] .*nothing was executed/,
    );
    expect(calls).toEqual(['good']);
    const c = only(completionsOf(outcome));
    expect(c.status).toBe('verified');
    expect(c.idempotencyKey.startsWith('conversation-7:assign_ticket:')).toBe(true);
    expect((await runner.store.get(c.operationId))?.actor).toBe('agent:helpdesk');
    expect((await tickets.get('T-1'))?.assignee).toBe('ana');
    expect(tickets.writes).toHaveLength(1);
  });

  it('arktype input: listed through its own JSON Schema converter, non-strict; readback validates', async () => {
    const { hd, runner } = helpdesk();
    const base = hd.actions.updateTicket;
    const closeTicket = defineAction({
      ...base,
      name: 'close_ticket',
      input: type({ id: 'string', status: "'closed'" }),
    });
    const model = scriptedModel('close_ticket', { id: 'T-104', status: 'open' }, 'I could not close T-104.');
    const { completion: c } = passed(
      await runAgent(runner, model, [agentTool(runner, closeTicket, { scope })]),
    );
    expect(model.calls[0]?.request.tools[0]).toMatchObject({
      name: 'close_ticket',
      strict: false,
      parameters: { type: 'object', properties: { id: { type: 'string' }, status: { const: 'closed' } } },
    });
    expect(JSON.stringify(model.calls[0]?.request.tools[0])).not.toContain('$schema');
    // The model sent a value the schema forbids: readback refused it, and the model was told so.
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(shownOnSecondCall(model)).toEqual({ type: 'text', text: completionText(c) });
    expect(hd.tickets.writes).toEqual([]);
  });

  it('customData carries the completion to the app but is not sent to the model', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('update_ticket', { id: 'T-104', status: 'resolved' }, 'T-104 is resolved.');
    const outcome = await runAgent(runner, model, [agentTool(runner, hd.actions.updateTicket, { scope })]);
    if (outcome.tripped) throw new Error('tripped');
    const c = only(completionsOf(outcome));
    const [shown] = toolResultsIn(model, 1);
    expect(Object.keys(shown as object).sort()).toEqual(['callId', 'name', 'output', 'status', 'type']);
    expect(JSON.stringify(model.calls[1]?.request.input)).not.toContain('"checks"');
    expect((await runner.store.get(c.operationId))?.completion).toEqual(c);
  });

  it('misuse of readback fails the SDK run instead of being shown to the model', async () => {
    const { hd, runner } = helpdesk();
    const model = scriptedModel('update_ticket', { id: 'T-104', status: 'resolved' }, 'unused');
    const tools = [agentTool(runner, hd.actions.updateTicket, { scope, runId: '' })];
    await expect(runAgent(runner, model, tools)).rejects.toThrow(/runId/);
    expect(model.calls).toHaveLength(1);
    expect(hd.tickets.writes).toEqual([]);
  });
});
