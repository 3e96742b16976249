import { Agent, Runner, tool } from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineAction } from '../../src/index.js';
import { type AgentTool, agentTool, completionsOf } from '../../src/openai-agents/index.js';
import { createHelpdesk, type FakeTicketSystem } from '../../src/testing/index.js';
import { scriptedModel, shownOnSecondCall } from './support.js';

const scope = { tenant: 'acme' };

/** Runs one scripted agent turn (no guardrail: shadow mode is for rollout) and returns what the model saw. */
async function shownBy(tools: AgentTool[], input: Record<string, unknown>) {
  const model = scriptedModel('update_ticket', input, 'Done.');
  const agent = new Agent({ name: 'helpdesk', instructions: 'Use the tools.', model, tools });
  const result = await new Runner({ tracingDisabled: true }).run(agent, 'Please help.');
  return { shown: shownOnSecondCall(model), result };
}

/** The same ticket write as a plain SDK tool: the live tool before readback was added. */
function liveTool(tickets: FakeTicketSystem) {
  return tool({
    name: 'update_ticket',
    description: 'Set the status of a helpdesk ticket.',
    parameters: z.object({ id: z.string(), status: z.enum(['open', 'pending', 'resolved', 'closed']) }),
    execute: ({ id, status }) => tickets.update(id, { status }, { tenant: 'acme', operationId: 'live-1' }),
  }) as unknown as AgentTool;
}

function setup() {
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  const runner = createRunner({ clock: hd.clock, random: () => 0.5, shadow: true });
  return { hd, runner };
}

describe('readback/openai-agents in shadow mode (Agent + Runner + ScriptedModel)', () => {
  it('the model is shown exactly what the live tool showed it before; the verdict goes to the record', async () => {
    const before = setup();
    before.hd.tickets.faults.softFailNextWrite = true;
    const live = await shownBy([liveTool(before.hd.tickets)], { id: 'T-104', status: 'resolved' });

    const { hd, runner } = setup();
    hd.tickets.faults.softFailNextWrite = true;
    const shadowed = await shownBy([agentTool(runner, hd.actions.updateTicket, { scope })], {
      id: 'T-104',
      status: 'resolved',
    });
    expect(shadowed.shown).toEqual(live.shown);
    expect(shadowed.shown).toEqual({ type: 'text', text: '{"ok":true,"version":2}' });
    // Nothing readback found rides on the run as proof.
    expect(completionsOf(shadowed.result)).toEqual([]);
    expect((await hd.tickets.get('T-104'))?.status).not.toBe('resolved');
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
  });

  it("a live tool's thrown error is shown as the SDK shows any tool's error; the record keeps it", async () => {
    const before = setup();
    before.hd.tickets.faults.landNextWriteAfterMs = 0;
    const live = await shownBy([liveTool(before.hd.tickets)], { id: 'T-104', status: 'closed' });

    const { hd, runner } = setup();
    hd.tickets.faults.landNextWriteAfterMs = 0;
    const shadowed = await shownBy([agentTool(runner, hd.actions.updateTicket, { scope })], {
      id: 'T-104',
      status: 'closed',
    });
    expect(shadowed.shown).toEqual(live.shown);
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.shadow).toMatchObject({ claimed: 'error', agrees: false });
  });
});

describe('readback/openai-agents shadow: a live tool that throws a non-Error value', () => {
  it('is shown as the SDK shows it, never as "not executed" (the tool did run)', async () => {
    const { runner } = setup();
    let calls = 0;
    const throwing = defineAction({
      ...createHelpdesk().actions.updateTicket,
      async execute() {
        calls++;
        throw 'gateway said no';
      },
    });
    const plain = tool({
      name: 'update_ticket',
      description: 'Set the status of a helpdesk ticket.',
      parameters: z.object({ id: z.string(), status: z.string() }),
      execute: () => {
        throw 'gateway said no';
      },
    }) as unknown as AgentTool;
    const input = { id: 'T-104', status: 'closed' };
    const live = await shownBy([plain], input);
    const shadowed = await shownBy([agentTool(runner, throwing, { scope })], input);
    expect(calls).toBe(1);
    expect(shadowed.shown).toEqual(live.shown);
    expect(JSON.stringify(shadowed.shown)).not.toMatch(/not executed/);
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.shadow).toMatchObject({ claimed: 'error' });
  });
});
