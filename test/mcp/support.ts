import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, expect } from 'vitest';
import type { Completion, Runner } from '../../src/index.js';
import { type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import { helpdesk } from '../support/helpdesk.js';

/** Connects `client` to `server` over a linked in-memory pair and lists its tools; `close` shuts both. */
export async function link(server: McpServer, client: Client) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  // Listing caches the output-schema validators, so every callTool after it is checked against them.
  const tools = await client.listTools();
  const close = async () => {
    await client.close();
    await server.close();
  };
  return { client, tools, close };
}

/** A helpdesk served by a real McpServer, reached by the SDK's own Client over an in-memory pair. */
export async function connect(
  options: McpRegisterOptions = { scope: { tenant: 'acme' } },
  setup: { wrap?: (runner: Runner) => Runner; shadow?: boolean } = {},
) {
  const { hd, runner } = helpdesk(setup.shadow ? { shadow: true } : {});
  const server = new McpServer({ name: 'helpdesk', version: '1.0.0' });
  registerActions(server, setup.wrap ? setup.wrap(runner) : runner, hd.actions, options);
  const session = await link(server, new Client({ name: 'test-client', version: '1.0.0' }));
  return { hd, runner, server, ...session };
}

/** Returns a function that keeps a session open until the end of the current test, then closes it. */
export function closeAfterEach(): <S extends { close(): Promise<void> }>(session: S) => S {
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const session of open.splice(0)) await session.close();
  });
  return (session) => {
    open.push(session);
    return session;
  };
}

/** The one text item a call returned: what the model is shown. */
export function textOf(result: object): string {
  const content = (result as { content?: unknown }).content as { type: string; text?: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]?.type).toBe('text');
  return content[0]?.text ?? '';
}

/** The completion carried as structuredContent. */
export function completionOf(result: object): Completion {
  const { structuredContent } = result as { structuredContent?: unknown };
  expect(structuredContent).toBeDefined();
  return structuredContent as Completion;
}

/** The `send_email` arguments the task tests send. */
export const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

/** Calls `send_email` as a task with the SDK's client task API; resolves once the task is created. */
export async function startEmailTask(client: Client) {
  const stream = client.experimental.tasks.callToolStream(
    { name: 'send_email', arguments: email, task: { ttl: 60_000 } },
    CallToolResultSchema,
  );
  const created = (await stream.next()).value;
  if (created?.type !== 'taskCreated') throw new Error(`expected taskCreated, got ${created?.type}`);
  return { stream, taskId: created.task.taskId, created: created.task };
}
