import { setSensitiveDataLoggingEnabled } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createRunner, ReadbackError } from '../../src/index.js';
import { agentTool, agentTools } from '../../src/openai-agents/index.js';
import { assignTicket, helpdesk, oneTicket } from '../support/helpdesk.js';
import { runAgent, toolResultsIn } from './support.js';

/** What the model was shown for its first tool call, after the SDK refused the arguments. */
async function shownForBadAssignee() {
  const { clock, tickets } = oneTicket();
  const runner = createRunner({ clock });
  const assign = assignTicket(tickets, z.object({ id: z.string(), assignee: z.string().min(1) }));
  const model = new ScriptedModel([
    [functionCall('assign_ticket', { id: 'T-1', assignee: '' }, { callId: 'bad' })],
    [assistantMessage('I could not assign T-1.')],
  ]);
  await runAgent(runner, model, [agentTool(runner, assign, { scope: { tenant: 'acme' } })]);
  expect(tickets.writes).toEqual([]);
  const [shown] = toolResultsIn(model, 1);
  return (shown as { output: { text: string } }).output.text;
}

describe('readback/openai-agents: arguments the SDK refuses', () => {
  afterEach(() => setSensitiveDataLoggingEnabled(false));

  it('the model is told what was wrong with them when the SDK hands over the validation error', async () => {
    // The SDK passes the schema's error to the tool only when tool data may be logged.
    setSensitiveDataLoggingEnabled(true);
    const text = await shownForBadAssignee();
    expect(text).toMatch(/^\[not executed: InvalidToolInputError\] .*nothing was executed\./);
    expect(text).toContain('What was wrong: assignee: Too small: expected string to have >=1 characters.');
  });

  it('with tool data redacted (the SDK default) the model is still told nothing ran, and no details leak', async () => {
    setSensitiveDataLoggingEnabled(false);
    const text = await shownForBadAssignee();
    expect(text).toMatch(/^\[not executed: InvalidToolInputError\] .*nothing was executed\./);
    expect(text).not.toContain('What was wrong');
  });
});

describe('readback/openai-agents: wrong arguments to agentTool/agentTools fail at creation', () => {
  it('a missing runner, a non-action, a repeated name and an unknown per-action name are ReadbackErrors', () => {
    const { hd, runner } = helpdesk();
    const cases: [() => unknown, string][] = [
      [
        () => agentTool(undefined as never, hd.actions.updateTicket),
        'runner: expected a runner made by createRunner()',
      ],
      [() => agentTools(runner, undefined as never), 'actions: expected an array of actions'],
      [
        () => agentTools(runner, [hd.actions.updateTicket, 7 as never]),
        'actions[1]: expected an action made by defineAction()',
      ],
      [
        () => agentTools(runner, { a: hd.actions.updateTicket, b: hd.actions.updateTicket }),
        'actions.b: the tool name "update_ticket" is also given by actions.a',
      ],
      [
        () => agentTools(runner, [hd.actions.updateTicket], { actions: { update_tickt: { wait: false } } }),
        'options.actions.update_tickt: no listed action is named "update_tickt" (listed: update_ticket)',
      ],
    ];
    for (const [attempt, message] of cases) {
      expect(attempt).toThrow(ReadbackError);
      expect(attempt).toThrow(message);
    }
  });
});
