import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { ReadbackError } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import { helpdesk } from '../support/helpdesk.js';
import { closeAfterEach, link } from './support.js';

const track = closeAfterEach();

/** A server that already serves one tool of its own, `ping`. */
function serverWithPing() {
  const server = new McpServer({ name: 'x', version: '1' });
  server.registerTool('ping', { description: 'Ping.' }, async () => ({
    content: [{ type: 'text', text: 'pong' }],
  }));
  return server;
}

/** The names the server lists to a real client. */
async function listed(server: McpServer): Promise<string[]> {
  const { tools } = track(await link(server, new Client({ name: 'c', version: '1' })));
  return tools.tools.map((t) => t.name).sort();
}

/** The ReadbackError `attempt` throws. */
function refusal(attempt: () => unknown): ReadbackError {
  try {
    attempt();
  } catch (error) {
    expect(error).toBeInstanceOf(ReadbackError);
    return error as ReadbackError;
  }
  throw new Error('expected a ReadbackError, nothing was thrown');
}

describe('registerActions: wrong arguments fail at creation with a ReadbackError, and register nothing', () => {
  it('a missing runner or server is named, not a TypeError', () => {
    const { hd, runner } = helpdesk();
    const noRunner = refusal(() => registerActions(serverWithPing(), undefined as never, hd.actions));
    expect(noRunner).toMatchObject({ code: 'invalid_options', field: 'runner' });
    expect(noRunner.message).toBe('runner: expected a runner made by createRunner()');
    const noServer = refusal(() => registerActions({} as never, runner, hd.actions));
    expect(noServer).toMatchObject({ code: 'invalid_options', field: 'server' });
    const noActions = refusal(() => registerActions(serverWithPing(), runner, undefined as never));
    expect(noActions).toMatchObject({ code: 'invalid_options', field: 'actions' });
  });

  it('a non-action in the list is named by its index, and the actions before it are not served', async () => {
    const { hd, runner } = helpdesk();
    const server = serverWithPing();
    const error = refusal(() =>
      registerActions(server, runner, [hd.actions.updateTicket, { name: 'x' } as never]),
    );
    expect(error.message).toBe('actions[1]: expected an action made by defineAction()');
    expect(await listed(server)).toEqual(['ping']);
  });

  it('the same tool name twice is refused before the SDK half-registers the list', async () => {
    const { hd, runner } = helpdesk();
    const server = serverWithPing();
    const error = refusal(() =>
      registerActions(server, runner, [
        hd.actions.updateTicket,
        hd.actions.sendEmail,
        hd.actions.updateTicket,
      ]),
    );
    expect(error).toMatchObject({ code: 'invalid_options', field: 'actions[2]' });
    expect(error.message).toContain('"update_ticket" is also given by actions[0]');
    expect(await listed(server)).toEqual(['ping']);
  });

  it('per-action settings for a name that is not listed are refused instead of ignored', async () => {
    const { hd, runner } = helpdesk();
    const server = serverWithPing();
    const error = refusal(() =>
      registerActions(server, runner, [hd.actions.sendEmail], { actions: { send_emial: { wait: false } } }),
    );
    expect(error).toMatchObject({ code: 'invalid_options', field: 'options.actions.send_emial' });
    expect(error.message).toContain('no listed action is named "send_emial" (listed: send_email)');
    expect(await listed(server)).toEqual(['ping']);
  });

  it("a name the server already serves is a ReadbackError naming the action (the SDK's own is a plain Error)", async () => {
    const { hd, runner } = helpdesk();
    const server = serverWithPing();
    const ping = { ...hd.actions.updateTicket, name: 'ping' };
    const error = refusal(() => registerActions(server, runner, [ping]));
    expect(error).toMatchObject({ code: 'invalid_options', field: 'action.name' });
    expect(error.message).toContain('the server refused the tool "ping"');
    expect(error.message).toContain('already registered');
  });

  it('tasks named on a committed action leave no tool behind', async () => {
    const { hd, runner } = helpdesk();
    const server = serverWithPing();
    refusal(() =>
      registerActions(server, runner, [hd.actions.sendEmail, hd.actions.updateTicket], {
        actions: { update_ticket: { tasks: true } },
      }),
    );
    expect(await listed(server)).toEqual(['ping']);
  });
});
