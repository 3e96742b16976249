import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { type } from 'arktype';
import { describe, expect, it } from 'vitest';
import type { RunContext, Runner } from '../../src/index.js';
import { createRunner, ReadbackError } from '../../src/index.js';
import { completionText, registerActions } from '../../src/mcp/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { assignTicket, helpdesk } from '../support/helpdesk.js';
import { closeAfterEach, completionOf, textOf } from './support.js';

// The same registerActions, on the v2 split packages: the v2 McpServer and the v2 Client, unmodified.
const track = closeAfterEach();

async function connect(wrap: (runner: Runner) => Runner = (runner) => runner, inputValidation?: 'sdk') {
  const { hd, runner } = helpdesk();
  // An ArkType input schema: SDK 2.x lists and validates any Standard Schema that carries JSON Schema.
  const assign = assignTicket(hd.tickets, type({ id: 'string', assignee: 'string > 0' }), () => 'acme');
  const server = new McpServer({ name: 'helpdesk', version: '1.0.0' });
  registerActions(server, wrap(runner), [...Object.values(hd.actions), assign], {
    scope: { tenant: 'acme' },
    ...(inputValidation ? { inputValidation } : {}),
  });
  const client = new Client({ name: 'v2-client', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  const tools = await client.listTools();
  track({
    close: async () => {
      await client.close();
      await server.close();
    },
  });
  return { hd, runner, client, tools };
}

const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

describe('readback/mcp on the v2 split packages (@modelcontextprotocol/server + client 2.x, in memory)', () => {
  it('tools/list: every action, the Completion as output schema, truthful annotations', async () => {
    const { tools } = await connect();
    const byName = Object.fromEntries(tools.tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual([
      'assign_ticket',
      'migrate_records',
      'page_oncall',
      'refund_order',
      'send_email',
      'update_ticket',
    ]);
    const ticket = byName.update_ticket;
    expect(ticket?.description).toContain('The ticket has the requested status, written by this operation.');
    // readback's own schema() has no JSON Schema: listed open, validated by readback on the run.
    expect(ticket?.inputSchema.type).toBe('object');
    expect(ticket?.outputSchema?.required).toEqual(
      expect.arrayContaining(['status', 'operationId', 'message', 'nextAllowedAction', 'safeToRepeat']),
    );
    expect(ticket?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
    expect(byName.assign_ticket?.inputSchema.properties).toMatchObject({
      id: { type: 'string' },
      assignee: { type: 'string', minLength: 1 },
    });
    expect(byName.assign_ticket?.inputSchema.required).toEqual(['assignee', 'id']);
  });

  it('verified: the ticket really changed, isError false, the text says verified', async () => {
    const { client, hd } = await connect();
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(false);
    expect(c.status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect(textOf(result)).toBe(completionText(c));
    expect(textOf(result)).toMatch(/^\[status: verified\]/);
  });

  it('soft-failed write: isError true, failed readback_mismatch, the ticket did not change', async () => {
    const { client, hd } = await connect();
    hd.tickets.faults.softFailNextWrite = true;
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('readback_mismatch');
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    expect(textOf(result)).toMatch(/^\[status: failed, errorCode: readback_mismatch, next: repair\]/);
  });

  it('stuck email: unknown is an error result; nobody received it', async () => {
    const { client, hd } = await connect();
    hd.mail.faults.nextOutcome = 'stuck';
    const result = await client.callTool({ name: 'send_email', arguments: email });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('unknown');
    expect(hd.mail.inbox(email.to)).toEqual([]);
    expect(textOf(result)).toMatch(/^\[status: unknown, errorCode: poll_budget_exhausted/);
  });

  it('no_op and invalid input behave as on SDK 1.x', async () => {
    const { client, hd } = await connect();
    const noop = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-105', status: 'resolved' },
    });
    expect(noop.isError).toBe(false);
    expect(completionOf(noop).status).toBe('no_op');
    const bad = await client.callTool({ name: 'update_ticket', arguments: { id: 'T-104', status: 'done' } });
    expect(bad.isError).toBe(true);
    expect(completionOf(bad).errorCode).toBe('invalid_input');
    expect(hd.tickets.writes).toEqual([]);
  });

  it('an ArkType input: listed as the SDK derives it, invalid arguments reach readback (invalid_input), nothing runs; a valid one is verified', async () => {
    const { client, hd, tools } = await connect();
    const bySdk = await connect(undefined, 'sdk');
    const listed = (list: typeof tools) => list.tools.find((t) => t.name === 'assign_ticket')?.inputSchema;
    expect(listed(tools)).toStrictEqual(listed(bySdk.tools));
    const bad = await client.callTool({ name: 'assign_ticket', arguments: { id: 'T-104', assignee: '' } });
    expect(bad.isError).toBe(true);
    expect(completionOf(bad)).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(completionOf(bad).reason).toMatch(/assignee/);
    expect(hd.tickets.writes).toEqual([]);
    const good = await client.callTool({
      name: 'assign_ticket',
      arguments: { id: 'T-104', assignee: 'ana' },
    });
    expect(completionOf(good).status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.assignee).toBe('ana');
  });

  it("with inputValidation: 'sdk', the SDK rejects an invalid ArkType input itself (no completion: readback never ran)", async () => {
    const { client, hd } = await connect(undefined, 'sdk');
    const bad = await client.callTool({ name: 'assign_ticket', arguments: { id: 'T-104', assignee: '' } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect(hd.tickets.writes).toEqual([]);
  });

  it('run context from the v2 ServerContext: scope, the request signal, one run id per connection', async () => {
    const contexts: RunContext[] = [];
    const { client, runner } = await connect((inner) => ({
      ...inner,
      run: (action, input, ctx) => {
        contexts.push(ctx);
        return inner.run(action, input, ctx);
      },
    }));
    const args = { name: 'update_ticket', arguments: { id: 'T-104', status: 'closed' } };
    const first = completionOf(await client.callTool(args));
    const second = completionOf(await client.callTool(args));
    expect(contexts).toHaveLength(2);
    const ctx = contexts[0] as RunContext;
    expect(ctx.runId).toMatch(/^mcp:[0-9a-f-]{36}$/);
    expect(ctx.scope).toEqual({ tenant: 'acme' });
    expect(ctx.signal).toBeInstanceOf(AbortSignal);
    // Same run, same input: the same operation, not a second write.
    expect(second.operationId).toBe(first.operationId);
    expect((await runner.store.get(first.operationId))?.scope).toEqual({ tenant: 'acme' });
  });

  it('tasks are refused on a v2 server (no experimental task API there), naming the option', () => {
    const hd = createHelpdesk();
    const server = new McpServer({ name: 'x', version: '1' });
    const attempt = () =>
      registerActions(server, createRunner({ clock: hd.clock }), [hd.actions.sendEmail], { tasks: true });
    expect(attempt).toThrow(ReadbackError);
    expect(attempt).toThrow(/^tasks: this server has no experimental task support/);
  });
});
