// A task whose action was accepted but whose follow-up poll threw (a store that went away, a wrapped runner's
// fault) must still hand the client the operation id: the effect may land, and only that id lets it be polled.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createRunner } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { closeAfterEach, link, startEmailTask } from './support.js';

const track = closeAfterEach();

describe('readback/mcp tasks: a poll that throws after the action was accepted (audit)', () => {
  it('ends the task failed, and its result still names the accepted operation and its pending status', async () => {
    const hd = createHelpdesk();
    const runner = createRunner({ clock: hd.clock, random: () => 0.5 });
    const taskStore = new InMemoryTaskStore();
    const server = new McpServer(
      { name: 'h', version: '1.0.0' },
      { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore },
    );
    registerActions(
      server,
      { ...runner, poll: () => Promise.reject(new Error('store connection lost')) },
      hd.actions,
      { tasks: { pollIntervalMs: 5 } },
    );
    const linked = await link(server, new Client({ name: 'c', version: '1.0.0' }));
    const { client } = track({
      client: linked.client,
      close: async () => {
        taskStore.cleanup();
        await linked.close();
      },
    });
    const { stream, created } = await startEmailTask(client);
    for await (const _ of stream) {
      // drain
    }
    expect((await client.experimental.tasks.getTask(created.taskId)).status).toBe('failed');
    const result = await client.experimental.tasks.getTaskResult(created.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    // The operation really was accepted: the store holds it, and the client is told its id.
    const [record] = await runner.store.list({});
    expect(record).toBeDefined();
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain('store connection lost');
    expect(text).toContain(record!.id);
    expect(text).toMatch(/status: pending/);
    expect(text).not.toMatch(/status: verified/);
    expect(result.structuredContent).toMatchObject({ status: 'pending', operationId: record!.id });
  });
});
