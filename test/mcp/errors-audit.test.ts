import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { accepted, createRunner, defineAction } from '../../src/index.js';
import { CONTEXT_REFUSED_TEXT } from '../../src/integrations/text.js';
import { completionSchema, registerActions } from '../../src/mcp/index.js';
import { helpdesk } from '../support/helpdesk.js';
import { closeAfterEach, completionOf, connect, email, link, startEmailTask, textOf } from './support.js';

const track = closeAfterEach();

const refuse = () => {
  throw new Error('no tenant for user 42');
};

/** send_email served as a task tool whose scope function refuses every call, reached by the SDK's client. */
async function refusingTaskServer() {
  const { hd, runner } = helpdesk();
  const taskStore = new InMemoryTaskStore();
  const server = new McpServer(
    { name: 'helpdesk', version: '1.0.0' },
    { taskStore, capabilities: { tasks: { requests: { tools: { call: {} } } } } },
  );
  registerActions(server, runner, [hd.actions.sendEmail], { scope: refuse, tasks: true });
  const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
  return { hd, runner, taskStore, client };
}

/** A committed write whose execute throws or hangs past its deadline; the thing never appears. */
function brokenWrite(kind: 'throw' | 'hang') {
  return defineAction({
    name: 'write_thing',
    description: 'Writes a thing.',
    input: z.object({ id: z.string() }),
    target: (i) => `thing:${i.id}`,
    postcondition: 'The thing is written.',
    execute: async () => {
      if (kind === 'throw') throw new Error('connection reset by peer');
      await new Promise((r) => setTimeout(r, 5_000));
    },
    observe: async () => null,
    expect: () => ({ written: true }),
    executeTimeoutMs: 30,
    maxInFlightMs: 0,
  });
}

describe('readback/mcp per-call options that throw (audit)', () => {
  it('a scope option that throws: an error result saying nothing ran, not the raw error; nothing written', async () => {
    const { client, hd } = track(await connect({ scope: refuse }));
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(CONTEXT_REFUSED_TEXT);
    expect(textOf(result)).not.toContain('no tenant');
    expect(hd.tickets.writes).toEqual([]);
  });

  it('actor and runId options that throw are refused the same way, in shadow mode too', async () => {
    const actor = track(await connect({ scope: { tenant: 'acme' }, actor: refuse }));
    const byActor = await actor.client.callTool({ name: 'send_email', arguments: email });
    expect(textOf(byActor)).toBe(CONTEXT_REFUSED_TEXT);
    expect(actor.hd.mail.inbox(email.to)).toEqual([]);
    const shadow = track(await connect({ scope: { tenant: 'acme' }, runId: refuse }, { shadow: true }));
    const byRunId = await shadow.client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    expect(byRunId.isError).toBe(true);
    expect(textOf(byRunId)).toBe(CONTEXT_REFUSED_TEXT);
    expect(shadow.hd.tickets.writes).toEqual([]);
  });

  it('a scope option that throws on a task tool called without a task: refused with the same words', async () => {
    const { hd, taskStore, client } = await refusingTaskServer();
    // A plain tools/call on a tool with optional task support: the SDK creates the task itself.
    const result = await client.callTool({ name: 'send_email', arguments: email });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(CONTEXT_REFUSED_TEXT);
    expect(hd.mail.inbox(email.to)).toEqual([]);
    taskStore.cleanup();
  });

  it('a scope option that throws on a real task request: a task settled failed with the refusal; nothing sent', async () => {
    const { hd, runner, taskStore, client } = await refusingTaskServer();
    // Before, createTask threw and the client failed reading a plain result where a task was expected.
    const { taskId } = await startEmailTask(client);
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task.status).toBe('failed');
    expect(task.statusMessage).toBe(CONTEXT_REFUSED_TEXT);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(CONTEXT_REFUSED_TEXT);
    expect(hd.mail.inbox(email.to)).toEqual([]);
    expect(await runner.store.list()).toEqual([]);
    taskStore.cleanup();
  });
});

// Guards for paths that were already right: they fail if the signal, the outputSchema or idempotency regress.
describe('readback/mcp error and edge paths that already held (audit guards)', () => {
  it('execute that throws or times out: failed with a completion valid against the outputSchema, never done', async () => {
    for (const kind of ['throw', 'hang'] as const) {
      const server = new McpServer({ name: 's', version: '1.0.0' });
      registerActions(server, createRunner(), [brokenWrite(kind)]);
      // The SDK client checks structuredContent against the listed outputSchema on every call.
      const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
      const result = await client.callTool({ name: 'write_thing', arguments: { id: 'a' } });
      expect(result.isError).toBe(true);
      expect(completionSchema.safeParse(result.structuredContent).success).toBe(true);
      const c = completionOf(result);
      expect(['failed', 'unknown']).toContain(c.status);
      expect(textOf(result).startsWith(`[status: ${c.status}`)).toBe(true);
    }
  });

  it('a client cancelling while readback polls stops the wait: no verified record, no further reads', async () => {
    let reads = 0;
    const slowDelivery = defineAction({
      name: 'deliver',
      description: 'Queues a delivery.',
      input: z.object({ id: z.string() }),
      target: (i) => `delivery:${i.id}`,
      mode: 'accepted',
      postcondition: 'The delivery arrived.',
      execute: async () => accepted('ref-1'),
      observe: async () => {
        reads++;
        return { arrived: false };
      },
      terminal: () => 'running',
      expect: () => ({ arrived: true }),
      poll: { maxDurationMs: 60_000, maxReads: 1_000, initialDelayMs: 10, maxDelayMs: 10 },
    });
    const runner = createRunner();
    const server = new McpServer({ name: 's', version: '1.0.0' });
    registerActions(server, runner, [slowDelivery]);
    const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
    const controller = new AbortController();
    const call = client.callTool({ name: 'deliver', arguments: { id: 'd' } }, undefined, {
      signal: controller.signal,
    });
    await new Promise((r) => setTimeout(r, 60));
    expect(reads).toBeGreaterThan(0);
    controller.abort(new Error('user pressed stop'));
    await expect(call).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 50));
    const after = reads;
    await new Promise((r) => setTimeout(r, 80));
    // The run stopped polling when the request was cancelled, instead of reading for its whole budget.
    expect(reads).toBe(after);
    const [record] = await runner.store.list();
    expect(record?.completion?.status).not.toBe('verified');
  });

  it('two identical calls at once in one session join one operation: one email, both answers verified', async () => {
    const { client, hd } = track(await connect());
    const args = { name: 'send_email', arguments: email };
    const [a, b] = await Promise.all([client.callTool(args), client.callTool(args)]);
    expect(completionOf(a).operationId).toBe(completionOf(b).operationId);
    expect(completionOf(b).status).toBe('verified');
    expect(textOf(b)).toBe(textOf(a));
    expect(hd.mail.inbox(email.to)).toHaveLength(1);
  });
});
