import { describe, expect, it } from 'vitest';
import type { RunContext } from '../../src/index.js';
import { completionText } from '../../src/mcp/index.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { closeAfterEach, completionOf, connect, textOf } from './support.js';

const track = closeAfterEach();
const open = async (...args: Parameters<typeof connect>) => track(await connect(...args));

const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

/** What the model must be shown for any completion: the status in words, the message, the operation. */
function expectShown(text: string, c: ReturnType<typeof completionOf>) {
  expect(text).toBe(completionText(c));
  expect(text.startsWith(`[status: ${c.status}`)).toBe(true);
  expect(text).toContain(c.message);
  expect(text).toContain(c.operationId);
  if (c.errorCode) expect(text).toContain(`errorCode: ${c.errorCode}`);
  // Completion words appear only for verified.
  expect(claimsCompletion(c.message)).toBe(c.status === 'verified');
}

describe('readback/mcp with the SDK Client over InMemoryTransport', () => {
  it('tools/list shows every action with input and output schemas and truthful annotations', async () => {
    const { tools } = await open();
    const byName = Object.fromEntries(tools.tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual([
      'migrate_records',
      'page_oncall',
      'refund_order',
      'send_email',
      'update_ticket',
    ]);
    const ticket = byName.update_ticket;
    expect(ticket?.description).toContain('Set the status of a helpdesk ticket.');
    expect(ticket?.description).toContain('The ticket has the requested status, written by this operation.');
    expect(ticket?.inputSchema.type).toBe('object');
    expect(ticket?.outputSchema?.type).toBe('object');
    expect(ticket?.outputSchema?.required).toEqual(
      expect.arrayContaining(['status', 'operationId', 'message', 'nextAllowedAction', 'safeToRepeat']),
    );
    expect((ticket?.outputSchema?.properties as Record<string, { enum?: string[] }>).status?.enum).toEqual([
      'verified',
      'pending',
      'failed',
      'partial',
      'no_op',
      'unknown',
    ]);
    expect(ticket?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
    // send_email, refund_order and migrate_records are declared safe to repeat; page_oncall is not.
    expect(byName.send_email?.annotations?.idempotentHint).toBe(true);
    expect(byName.refund_order?.annotations?.idempotentHint).toBe(true);
    expect(byName.page_oncall?.annotations?.idempotentHint).toBe(false);
    for (const tool of tools.tools) expect(tool.outputSchema).toBeDefined();
  });

  it('destructiveHint and title can be set per action', async () => {
    const { tools } = await open({ actions: { send_email: { destructive: false, title: 'Send email' } } });
    const send = tools.tools.find((t) => t.name === 'send_email');
    expect(send?.annotations).toMatchObject({ destructiveHint: false, title: 'Send email' });
    expect(send?.title).toBe('Send email');
    expect(tools.tools.find((t) => t.name === 'update_ticket')?.annotations?.destructiveHint).toBe(true);
  });

  it('verified: the ticket really changed, isError false, the text says verified', async () => {
    const { client, hd } = await open();
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(false);
    expect(c.status).toBe('verified');
    expect(c.action).toBe('update_ticket');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    const text = textOf(result);
    expectShown(text, c);
    expect(text).toMatch(/^\[status: verified\] Verified: /);
  });

  it('soft-failed write: isError true, status failed, the client does not throw, the text names the status', async () => {
    const { client, hd } = await open();
    hd.tickets.faults.softFailNextWrite = true;
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('readback_mismatch');
    expect(c.nextAllowedAction).toBe('repair');
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    const text = textOf(result);
    expectShown(text, c);
    expect(text).toMatch(/^\[status: failed, errorCode: readback_mismatch, next: repair\]/);
  });

  it('dropped email: failed with provider_failed', async () => {
    const { client, hd } = await open();
    hd.mail.faults.nextOutcome = 'dropped';
    const result = await client.callTool({ name: 'send_email', arguments: email });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('provider_failed');
    expect(hd.mail.inbox(email.to)).toEqual([]);
    expectShown(textOf(result), c);
  });

  it('wait: false (per action): pending, isError false, the text says not verified', async () => {
    const { client, hd, runner } = await open({
      scope: { tenant: 'acme' },
      actions: { send_email: { wait: false } },
    });
    const result = await client.callTool({ name: 'send_email', arguments: email });
    const c = completionOf(result);
    expect(result.isError).toBe(false);
    expect(c.status).toBe('pending');
    expect(c.nextAllowedAction).toBe('poll');
    const text = textOf(result);
    expectShown(text, c);
    expect(text).toMatch(/^\[status: pending, errorCode: in_progress, next: poll\]/);
    expect(text).toContain('not verified');
    // The operation settles later through the runner.
    hd.clock.advance(hd.mail.deliveryDelayMs);
    expect((await runner.poll(c.operationId)).status).toBe('verified');
  });

  it('wait: false (global) applies to accepted actions', async () => {
    const { client } = await open({ scope: { tenant: 'acme' }, wait: false });
    const result = await client.callTool({ name: 'send_email', arguments: email });
    expect(completionOf(result).status).toBe('pending');
  });

  it('stuck email: unknown is an error result, and the text says it may be polled', async () => {
    const { client, hd } = await open();
    hd.mail.faults.nextOutcome = 'stuck';
    const result = await client.callTool({ name: 'send_email', arguments: email });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('poll_budget_exhausted');
    const text = textOf(result);
    expectShown(text, c);
    expect(text).toMatch(/^\[status: unknown, errorCode: poll_budget_exhausted, next: poll\]/);
  });

  it('no_op: the ticket already held; not an error', async () => {
    const { client, hd } = await open();
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-105', status: 'resolved' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(false);
    expect(c.status).toBe('no_op');
    expect(hd.tickets.writes).toEqual([]);
    expect(textOf(result)).toMatch(/^\[status: no_op/);
    expectShown(textOf(result), c);
  });

  it('partial: some records of a batch were not migrated; not an error, the text lists them', async () => {
    const { client, hd } = await open();
    const ids = hd.batch.seed(3);
    hd.batch.faults.failIds.add('rec-002');
    const result = await client.callTool({ name: 'migrate_records', arguments: { ids, toVersion: 2 } });
    const c = completionOf(result);
    expect(result.isError).toBe(false);
    expect(c.status).toBe('partial');
    expect(c.units?.failedTargets).toEqual(['record:rec-002']);
    const text = textOf(result);
    expectShown(text, c);
    expect(text).toMatch(/^\[status: partial/);
    expect(text).toContain('record:rec-002');
  });

  it('optimistic page: whatever status readback gives, the text repeats it', async () => {
    const { client } = await open();
    const result = await client.callTool({ name: 'page_oncall', arguments: { message: 'db down' } });
    const c = completionOf(result);
    expect(c.status).not.toBe('verified');
    expect(result.isError).toBe(c.status === 'failed' || c.status === 'unknown');
    expectShown(textOf(result), c);
  });

  it('invalid input: failed/invalid_input from readback, nothing executed', async () => {
    const { client, hd } = await open();
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'done' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(hd.tickets.writes).toEqual([]);
    const text = textOf(result);
    expectShown(text, c);
    expect(text).toMatch(/^\[status: failed, errorCode: invalid_input/);
  });

  it('run context: scope from options, runId from the connection, abort signal from the request', async () => {
    const contexts: RunContext[] = [];
    const { client, runner } = await open(
      { scope: () => ({ tenant: 'acme' }) },
      {
        wrap: (inner) => ({
          ...inner,
          run: (action, input, ctx) => {
            contexts.push(ctx);
            return inner.run(action, input, ctx);
          },
        }),
      },
    );
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'closed' },
    });
    const c = completionOf(result);
    expect(c.status).toBe('verified');
    expect(contexts).toHaveLength(1);
    const ctx = contexts[0] as RunContext;
    // No session on an in-memory transport: one run id per registerActions call.
    expect(ctx.runId).toMatch(/^mcp:[0-9a-f-]{36}$/);
    expect(ctx.scope).toEqual({ tenant: 'acme' });
    expect(ctx.signal).toBeInstanceOf(AbortSignal);
    expect(ctx.signal?.aborted).toBe(false);
    expect(c.idempotencyKey.startsWith(`${ctx.runId}:update_ticket:`)).toBe(true);
    const record = await runner.store.get(c.operationId);
    expect(record?.runId).toBe(ctx.runId);
    expect(record?.scope).toEqual({ tenant: 'acme' });
  });

  it('runId and actor can be derived from the request', async () => {
    const { client, runner } = await open({
      scope: { tenant: 'acme' },
      runId: (extra) => `chat:${extra.sessionId ?? 'local'}`,
      actor: () => 'agent-7',
    });
    const c = completionOf(
      await client.callTool({ name: 'update_ticket', arguments: { id: 'T-104', status: 'closed' } }),
    );
    const record = await runner.store.get(c.operationId);
    expect(record?.runId).toBe('chat:local');
    expect(record?.actor).toBe('agent-7');
  });

  it('a repeated identical call in one connection gets the same operation, not a second effect', async () => {
    const { client, hd } = await open();
    const args = { name: 'update_ticket', arguments: { id: 'T-104', status: 'resolved' } };
    const first = completionOf(await client.callTool(args));
    const second = completionOf(await client.callTool(args));
    expect(second.operationId).toBe(first.operationId);
    expect(hd.tickets.writes).toHaveLength(1);
  });
});
