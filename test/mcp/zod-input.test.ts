import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineAction } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import { FakeClock, FakeTicketSystem } from '../../src/testing/index.js';
import { completionOf, textOf } from './support.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function zodServer() {
  const clock = new FakeClock();
  const tickets = new FakeTicketSystem({ clock });
  tickets.seed([{ id: 'T-1', tenant: 'acme' }]);
  const assign = defineAction({
    name: 'assign_ticket',
    description: 'Assign a ticket.',
    input: z.object({ id: z.string(), assignee: z.string().min(1) }),
    target: (input) => `ticket:${input.id}`,
    postcondition: 'The ticket is assigned to the requested person.',
    execute: (input, ctx) =>
      tickets.update(
        input.id,
        { assignee: input.assignee },
        { tenant: 'acme', operationId: ctx.operationId },
      ),
    observe: (input) => tickets.get(input.id),
    expect: (input) => ({ assignee: input.assignee }),
    safeToRepeat: true,
  });
  const runner = createRunner({ clock });
  const server = new McpServer({ name: 'zod', version: '1.0.0' });
  registerActions(server, runner, [assign]);
  const client = new Client({ name: 'c', version: '1.0.0' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(b), client.connect(a)]);
  close = async () => {
    await client.close();
    await server.close();
  };
  return { client, tickets, tools: await client.listTools() };
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

  it('invalid arguments are refused by the SDK before anything runs (an error result, no completion)', async () => {
    const { client, tickets } = await zodServer();
    const result = await client.callTool({ name: 'assign_ticket', arguments: { id: 'T-1', assignee: '' } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toMatch(/Input validation error/);
    expect(tickets.writes).toEqual([]);
  });
});
