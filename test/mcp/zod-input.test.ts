import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';
import { closeAfterEach, completionOf, link, textOf } from './support.js';

const track = closeAfterEach();

async function zodServer(inputValidation?: 'sdk') {
  const { clock, tickets } = oneTicket();
  const assign = assignTicket(
    tickets,
    z.object({ id: z.string(), assignee: z.string().min(1) }),
    () => 'acme',
  );
  const server = new McpServer({ name: 'zod', version: '1.0.0' });
  registerActions(server, createRunner({ clock }), [assign], inputValidation ? { inputValidation } : {});
  const { client, tools } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
  return { client, tickets, tools };
}

describe('readback/mcp with a zod input schema', () => {
  it('lists the zod schema as the input schema', async () => {
    const { tools } = await zodServer();
    const tool = tools.tools[0];
    expect(tool?.inputSchema.properties).toMatchObject({
      id: { type: 'string' },
      assignee: { type: 'string' },
    });
    expect(tool?.inputSchema.required).toEqual(['id', 'assignee']);
    expect(tool?.annotations?.idempotentHint).toBe(true);
  });

  it('runs a valid call to a verified completion', async () => {
    const { client, tickets } = await zodServer();
    const result = await client.callTool({
      name: 'assign_ticket',
      arguments: { id: 'T-1', assignee: 'ana' },
    });
    expect(result.isError).toBe(false);
    expect(completionOf(result).status).toBe('verified');
    expect(textOf(result)).toMatch(/^\[status: verified\] Verified: /);
    expect((await tickets.get('T-1'))?.assignee).toBe('ana');
  });

  it('with inputValidation: sdk, invalid arguments are refused by the SDK before anything runs (an error result, no completion)', async () => {
    const { client, tickets } = await zodServer('sdk');
    const result = await client.callTool({ name: 'assign_ticket', arguments: { id: 'T-1', assignee: '' } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toMatch(/Input validation error/);
    expect(tickets.writes).toEqual([]);
  });
});
