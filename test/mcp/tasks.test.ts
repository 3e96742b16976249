import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { ResponseMessage } from '@modelcontextprotocol/sdk/experimental/tasks';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type CallToolResult, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createRunner, ReadbackError } from '../../src/index.js';
import { completionText, type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { createHelpdesk, type FakeClock } from '../../src/testing/index.js';
import { closeAfterEach, completionOf, email, link, startEmailTask, textOf } from './support.js';

/**
 * The runner's clock, with a gate: while closed, every sleep (the waits between readback's polls) is held,
 * so the test can look at the task while readback is still polling; opening it hands the sleeps to the
 * helpdesk's fake clock, which runs them in virtual time.
 */
function gatedClock(base: FakeClock) {
  let open = false;
  const held: { ms: number; signal?: AbortSignal; resolve: () => void; reject: (e: unknown) => void }[] = [];
  const clock: Clock = {
    now: () => base.now(),
    sleep(ms, signal) {
      if (open) return base.sleep(ms, signal);
      return new Promise<void>((resolve, reject) => {
        const sleeper = { ms, ...(signal ? { signal } : {}), resolve, reject };
        held.push(sleeper);
        signal?.addEventListener(
          'abort',
          () => {
            held.splice(held.indexOf(sleeper), 1);
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
  };
  return {
    clock,
    open() {
      open = true;
      for (const s of held.splice(0)) base.sleep(s.ms, s.signal).then(s.resolve, s.reject);
    },
  };
}

const taskCapabilities = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };

const track = closeAfterEach();

async function connect(
  options: McpRegisterOptions = { scope: { tenant: 'acme' }, tasks: { pollIntervalMs: 5 } },
) {
  const hd = createHelpdesk();
  const gate = gatedClock(hd.clock);
  const runner = createRunner({ clock: gate.clock, random: () => 0.5 });
  const taskStore = new InMemoryTaskStore();
  const server = new McpServer(
    { name: 'helpdesk', version: '1.0.0' },
    { capabilities: taskCapabilities, taskStore },
  );
  registerActions(server, runner, hd.actions, options);
  // link lists the tools, which caches the output-schema validators: task results are checked too.
  const linked = await link(server, new Client({ name: 'task-client', version: '1.0.0' }));
  const close = async () => {
    taskStore.cleanup();
    await linked.close();
  };
  return track({ hd, gate, runner, client: linked.client, tools: linked.tools, close });
}

/** Reads the stream to its end. */
async function drain(stream: AsyncGenerator<ResponseMessage<CallToolResult>>) {
  const messages: ResponseMessage<CallToolResult>[] = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

describe('readback/mcp accepted-mode actions as MCP tasks (SDK client task API, in memory)', () => {
  it('tools/list: only the accepted-mode action is a task tool (optional), the others are plain tools', async () => {
    const { tools } = await connect();
    const byName = Object.fromEntries(tools.tools.map((t) => [t.name, t]));
    expect(byName.send_email?.execution?.taskSupport).toBe('optional');
    for (const name of ['update_ticket', 'refund_order', 'migrate_records', 'page_oncall']) {
      expect(byName[name]?.execution?.taskSupport ?? 'forbidden').toBe('forbidden');
    }
    expect(byName.send_email?.outputSchema?.type).toBe('object');
    expect(byName.send_email?.annotations?.idempotentHint).toBe(true);
  });

  it('working while readback polls (the status message is the pending completion), then verified', async () => {
    const { client, hd, gate } = await connect();
    const { stream, taskId, created } = await startEmailTask(client);
    expect(created.status).toBe('working');
    // The gate holds readback between polls, so the task is seen mid-flight.
    let working: { status: string; statusMessage?: string } | undefined;
    for (let i = 0; i < 50 && !working?.statusMessage?.startsWith('[status: pending'); i++) {
      const next = (await stream.next()).value;
      if (next?.type !== 'taskStatus') throw new Error(`expected taskStatus, got ${next?.type}`);
      working = next.task;
    }
    expect(working?.status).toBe('working');
    expect(working?.statusMessage).toMatch(/^\[status: pending, errorCode: in_progress, next: poll\]/);
    expect(working?.statusMessage).toContain('not verified');
    // The truth at this moment: the provider has the message queued, nobody has received it.
    expect(hd.mail.inbox(email.to)).toEqual([]);

    gate.open();
    const rest = await drain(stream);
    const last = rest.at(-1);
    if (last?.type !== 'result') throw new Error(`expected a result, got ${last?.type}`);
    const c = completionOf(last.result);
    expect(c.status).toBe('verified');
    expect(last.result.isError).toBe(false);
    expect(textOf(last.result)).toBe(completionText(c));
    expect(hd.mail.inbox(email.to)).toHaveLength(1);
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task.status).toBe('completed');
    expect(task.statusMessage).toBe(completionText(c));
  });

  it('stuck email: the completion is unknown, delivered as an error, and the task is not completed', async () => {
    const { client, hd, gate } = await connect();
    hd.mail.faults.nextOutcome = 'stuck';
    gate.open();
    const { stream, taskId } = await startEmailTask(client);
    const messages = await drain(stream);
    // SDK 1.x reports a failed task as an error on the stream; the completion is in tasks/result.
    expect(messages.map((m) => m.type)).not.toContain('result');
    expect(messages.at(-1)?.type).toBe('error');
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task.status).toBe('failed');
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    const c = completionOf(result);
    // tasks/get alone tells the same story as the result: the settled status, in words.
    expect(task.statusMessage).toBe(completionText(c));
    expect(result.isError).toBe(true);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('poll_budget_exhausted');
    const text = textOf(result);
    expect(text).toMatch(/^\[status: unknown, errorCode: poll_budget_exhausted, next: poll\]/);
    expect(claimsCompletion(c.message)).toBe(false);
    // The provider never delivered it: an honest unknown, not a silent success.
    expect(hd.mail.inbox(email.to)).toEqual([]);
  });

  it('dropped email: failed with provider_failed, isError, and the recipient got nothing', async () => {
    const { client, hd, gate } = await connect();
    hd.mail.faults.nextOutcome = 'dropped';
    gate.open();
    const { stream, taskId } = await startEmailTask(client);
    await drain(stream);
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('failed');
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('provider_failed');
    expect(textOf(result)).toBe(completionText(c));
    expect(hd.mail.inbox(email.to)).toEqual([]);
  });

  it('wait: false: the task is completed while the completion inside is pending; completed is not verified', async () => {
    const { client, hd, gate, runner } = await connect({
      scope: { tenant: 'acme' },
      tasks: { pollIntervalMs: 5 },
      actions: { send_email: { wait: false } },
    });
    const { stream, taskId } = await startEmailTask(client);
    const messages = await drain(stream);
    const last = messages.at(-1);
    if (last?.type !== 'result') throw new Error(`expected a result, got ${last?.type}`);
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('completed');
    const c = completionOf(last.result);
    expect(c.status).toBe('pending');
    expect(last.result.isError).toBe(false);
    expect(textOf(last.result)).toContain('not verified');
    expect(claimsCompletion(c.message)).toBe(false);
    expect(hd.mail.inbox(email.to)).toEqual([]);
    // The operation is still open in the runner: polling it later settles it for real.
    gate.open();
    hd.clock.advance(hd.mail.deliveryDelayMs);
    expect((await runner.poll(c.operationId)).status).toBe('verified');
  });

  it('a client that does not ask for a task still gets the settled completion (the SDK polls the task)', async () => {
    const { client, hd, gate } = await connect();
    gate.open();
    const result = await client.callTool({ name: 'send_email', arguments: email });
    const c = completionOf(result);
    expect(c.status).toBe('verified');
    expect(result.isError).toBe(false);
    expect(hd.mail.inbox(email.to)).toHaveLength(1);
  });

  it('tasks named on a committed action are refused with a clear error', () => {
    const hd = createHelpdesk();
    const server = new McpServer({ name: 'x', version: '1' }, { capabilities: taskCapabilities });
    const attempt = () =>
      registerActions(server, createRunner({ clock: hd.clock }), [hd.actions.updateTicket], {
        actions: { update_ticket: { tasks: true } },
      });
    expect(attempt).toThrow(ReadbackError);
    expect(attempt).toThrow(
      'actions.update_ticket.tasks: only accepted-mode actions run as MCP tasks; "update_ticket" is committed',
    );
  });
});
