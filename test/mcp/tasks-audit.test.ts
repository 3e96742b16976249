import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createRunner } from '../../src/index.js';
import { type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import type { Runner } from '../../src/runner/runner.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { closeAfterEach, email, link, startEmailTask } from './support.js';

const taskCapabilities = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };
const track = closeAfterEach();

async function connect(
  options: McpRegisterOptions,
  wrap: (runner: Runner) => Runner = (r) => r,
  clockOf: (hd: ReturnType<typeof createHelpdesk>) => Clock = (hd) => hd.clock,
) {
  const hd = createHelpdesk();
  const runner = createRunner({ clock: clockOf(hd), random: () => 0.5 });
  const taskStore = new InMemoryTaskStore();
  const server = new McpServer(
    { name: 'h', version: '1.0.0' },
    { capabilities: taskCapabilities, taskStore },
  );
  registerActions(server, wrap(runner), hd.actions, options);
  const linked = await link(server, new Client({ name: 'c', version: '1.0.0' }));
  return track({
    hd,
    runner,
    taskStore,
    client: linked.client,
    close: async () => {
      taskStore.cleanup();
      await linked.close();
    },
  });
}

describe('readback/mcp tasks at run time (audit)', () => {
  it('a scope function that refuses the request leaves no task working forever', async () => {
    const { client, hd } = await connect({
      tasks: { pollIntervalMs: 5 },
      scope: () => {
        throw new Error('no tenant for this client');
      },
    });
    // The client gets a task it can read, settled failed with the refusal at once (see errors-audit.test.ts).
    const { stream, taskId } = await startEmailTask(client);
    for await (const _ of stream) {
      // drain
    }
    const { tasks } = await client.experimental.tasks.listTasks();
    expect(tasks.filter((t) => t.status === 'working')).toEqual([]);
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('failed');
    expect(hd.mail.inbox(email.to)).toEqual([]);
  });

  it(
    'a runner that rejects with no error object still ends the task failed (no unhandled rejection)',
    { timeout: 5000 },
    async () => {
      const { client } = await connect({ tasks: { pollIntervalMs: 5 } }, (inner) => ({
        ...inner,
        run: () => Promise.reject(undefined),
      }));
      const { stream, created } = await startEmailTask(client);
      for await (const _ of stream) {
        // drain
      }
      const task = await client.experimental.tasks.getTask(created.taskId);
      expect(task.status).toBe('failed');
    },
  );

  it('a task cancelled while readback polls stays cancelled; the operation still settles in the store', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { client, runner, hd } = await connect({ tasks: { pollIntervalMs: 5 } }, undefined, (hd) => ({
      now: () => hd.clock.now(),
      sleep: async (ms, signal) => {
        await held;
        return hd.clock.sleep(ms, signal);
      },
    }));
    const { stream, created } = await startEmailTask(client);
    const taskId = created.taskId;
    for (
      let i = 0;
      i < 50 &&
      !(await client.experimental.tasks.getTask(taskId)).statusMessage?.startsWith('[status: pending');
      i++
    ) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await client.experimental.tasks.cancelTask(taskId);
    release();
    for (let i = 0; i < 100 && (await runner.store.list())[0]?.lifecycle !== 'settled'; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('cancelled');
    const [record] = await runner.store.list();
    expect(record?.completion?.status).toBe('verified');
    expect(hd.mail.inbox(email.to)).toHaveLength(1);
    await stream.return(undefined);
  });
});
