import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { closeAfterEach, completionOf, email, link, startEmailTask, textOf } from './support.js';

const taskCapabilities = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };
const track = closeAfterEach();

/**
 * A task-serving helpdesk whose runner traces to a callback sink. Its clock holds every sleep (readback's
 * waits) until `release`, so a test can look at a task while readback is still polling in the background.
 */
async function connect(options: McpRegisterOptions) {
  const hd = createHelpdesk();
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const clock: Clock = {
    now: () => hd.clock.now(),
    sleep: async (ms, signal) => {
      await held;
      return hd.clock.sleep(ms, signal);
    },
  };
  const events: TraceEvent[] = [];
  const runner = createRunner({
    clock,
    random: () => 0.5,
    trace: { sinks: [callbackSink((e) => void events.push(e))] },
  });
  const taskStore = new InMemoryTaskStore();
  const server = new McpServer(
    { name: 'h', version: '1.0.0' },
    { capabilities: taskCapabilities, taskStore },
  );
  registerActions(server, runner, hd.actions, options);
  const linked = await link(server, new Client({ name: 'c', version: '1.0.0' }));
  return track({
    hd,
    runner,
    events,
    release,
    client: linked.client,
    close: async () => {
      taskStore.cleanup();
      await linked.close();
    },
  });
}

describe('readback/mcp and pollAfter (audit)', () => {
  it('a pending result tells the model when to poll again, in its text and its structuredContent', async () => {
    const { client, release } = await connect({
      scope: { tenant: 'acme' },
      tasks: { pollIntervalMs: 5 },
      actions: { send_email: { wait: false } },
    });
    release();
    const { stream, taskId } = await startEmailTask(client);
    for await (const _ of stream) {
      // drain
    }
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    const c = completionOf(result);
    expect(c).toMatchObject({ status: 'pending', nextAllowedAction: 'poll' });
    expect(Date.parse(c.pollAfter ?? '')).not.toBeNaN();
    const text = textOf(result);
    expect(text).toContain(`(poll again after ${c.pollAfter}) (operation ${c.operationId})`);
    expect(claimsCompletion(text)).toBe(false);
    // tasks/get shows the same settled text.
    expect((await client.experimental.tasks.getTask(taskId)).statusMessage).toBe(text);
  });

  it('a plain (non-task) call answering pending carries the clause too', async () => {
    const { client, release } = await connect({ scope: { tenant: 'acme' }, wait: false });
    release();
    const result = await client.callTool({ name: 'send_email', arguments: email });
    const c = completionOf(result);
    expect(c.status).toBe('pending');
    expect(textOf(result)).toContain(`(poll again after ${c.pollAfter})`);
  });

  it('a working task: readback reads first at pollAfter; the status message shows no due time that would go stale', async () => {
    const { client, runner, events, release } = await connect({
      scope: { tenant: 'acme' },
      tasks: { pollIntervalMs: 5 },
    });
    const { stream, taskId } = await startEmailTask(client);
    let message: string | undefined;
    for (let i = 0; i < 100 && !message?.startsWith('[status: pending'); i++) {
      message = (await client.experimental.tasks.getTask(taskId)).statusMessage;
      if (!message?.startsWith('[status: pending')) await new Promise((r) => setTimeout(r, 5));
    }
    const pending = events.find((e) => e.type === 'completion');
    if (pending?.type !== 'completion') throw new Error('expected the run’s completion event');
    expect(pending).toMatchObject({ status: 'pending', nextAllowedAction: 'poll' });
    expect(pending.pollAfter).toBeDefined();
    expect(message).toMatch(/^\[status: pending, errorCode: in_progress, next: poll\]/);
    expect(message).not.toContain('poll again after');
    // Held: nothing has been read back since the run, whatever pace the client polls tasks/get at.
    expect(events.filter((e) => e.type === 'observe' && e.phase === 'poll')).toEqual([]);

    release();
    for await (const _ of stream) {
      // drain
    }
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('completed');
    const reads = events.filter((e) => e.type === 'observe' && e.phase === 'poll');
    expect(reads.length).toBeGreaterThan(0);
    // The background poll waited until the work was due: its first read is at pollAfter, not before.
    expect(reads[0]?.type === 'observe' ? reads[0].readAt : undefined).toBe(pending.pollAfter);
    const [record] = await runner.store.list();
    expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified', reads: reads.length });
  });
});
