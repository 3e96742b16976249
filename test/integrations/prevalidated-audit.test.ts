// Where a framework parses the arguments with the action's own schema (OpenAI Agents in strict mode, or
// `inputValidation: 'sdk'` in the AI SDK and MCP integrations), readback takes the parsed output as the input
// instead of parsing it again: a transform must run once. A non-idempotent one (`(s) => s + '!'`) ran twice
// before, a silent wrong write; and a shape-changing one was refused as invalid_input.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { generateText, stepCountIs } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiTool } from '../../src/ai-sdk/index.js';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import { agentTool } from '../../src/openai-agents/index.js';
import { scriptedModel } from '../ai-sdk/support.js';
import { closeAfterEach, completionOf, link } from '../mcp/support.js';
import { runAgent } from '../openai-agents/support.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';

const track = closeAfterEach();
const scope = { tenant: 'acme' };

/**
 * An assign_ticket action whose schema counts its parses in `parses`; by default its assignee field marks the
 * name (a transform that is not idempotent), or it is the given field schema.
 */
function marked(assignee?: z.ZodType<string>) {
  const { clock, tickets } = oneTicket();
  const events: TraceEvent[] = [];
  const runner = createRunner({ clock, trace: { sinks: [callbackSink((e) => void events.push(e))] } });
  const parses = { count: 0 };
  const field =
    assignee ??
    z.string().transform((s) => {
      parses.count += 1;
      return `${s}!`;
    });
  const setup = {
    runner,
    tickets,
    events,
    parses,
    action: assignTicket(tickets, z.object({ id: z.string(), assignee: field })),
  };
  return setup;
}

/** What the call left behind: the ticket's assignee, the parses, and the validated input the trace recorded. */
async function leftBehind(setup: ReturnType<typeof marked>) {
  const selected = setup.events.find((e) => e.type === 'tool.selected');
  return {
    assignee: (await setup.tickets.get('T-1'))?.assignee,
    parses: setup.parses.count,
    valid: selected?.type === 'tool.selected' ? selected.valid : undefined,
  };
}

const once = { assignee: 'ana!', parses: 1, valid: true };

describe('a schema the framework already parsed is not parsed again', () => {
  it('OpenAI Agents (strict zod object): the schema is parsed once (the SDK cannot list a transform at all)', async () => {
    const setup = marked(
      z.string().refine(() => {
        setup.parses.count += 1;
        return true;
      }),
    );
    const model = new ScriptedModel([
      [functionCall('assign_ticket', { id: 'T-1', assignee: 'ana' }, { callId: 'c1' })],
      [assistantMessage('Assigned.')],
    ]);
    await runAgent(setup.runner, model, [agentTool(setup.runner, setup.action, { scope })]);
    expect(await leftBehind(setup)).toEqual({ ...once, assignee: 'ana' });
  });

  it("AI SDK with inputValidation: 'sdk': the transform runs once", async () => {
    const setup = marked();
    await generateText({
      model: scriptedModel('assign_ticket', { id: 'T-1', assignee: 'ana' }, 'Assigned.'),
      tools: {
        assign_ticket: aiTool(setup.runner, setup.action, { scope, inputValidation: 'sdk' }),
      },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1 to ana.',
    });
    expect(await leftBehind(setup)).toEqual(once);
  });

  it('AI SDK by default (readback validates the raw arguments): the transform runs once', async () => {
    const setup = marked();
    await generateText({
      model: scriptedModel('assign_ticket', { id: 'T-1', assignee: 'ana' }, 'Assigned.'),
      tools: { assign_ticket: aiTool(setup.runner, setup.action, { scope }) },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1 to ana.',
    });
    expect(await leftBehind(setup)).toEqual(once);
  });

  it("MCP with inputValidation: 'sdk', and by default: the transform runs once", async () => {
    for (const inputValidation of ['sdk', 'readback'] as const) {
      const setup = marked();
      const server = new McpServer({ name: 'desk', version: '1.0.0' });
      registerActions(server, setup.runner, [setup.action], { scope, inputValidation });
      const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
      const result = await client.callTool({
        name: 'assign_ticket',
        arguments: { id: 'T-1', assignee: 'ana' },
      });
      expect(completionOf(result).status).toBe('verified');
      expect(await leftBehind(setup)).toEqual(once);
    }
  });
});
