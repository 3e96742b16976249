import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { expect } from 'vitest';
import type { Completion, Runner } from '../../src/index.js';
import { createRunner } from '../../src/index.js';
import { type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import { createHelpdesk } from '../../src/testing/index.js';

/** A helpdesk served by a real McpServer, reached by the SDK's own Client over an in-memory pair. */
export async function connect(
  options: McpRegisterOptions = { scope: { tenant: 'acme' } },
  wrap: (runner: Runner) => Runner = (runner) => runner,
) {
  const hd = createHelpdesk();
  const runner = createRunner({ clock: hd.clock, random: () => 0.5 });
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'resolved' },
  ]);
  const server = new McpServer({ name: 'helpdesk', version: '1.0.0' });
  registerActions(server, wrap(runner), hd.actions, options);
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  // Listing caches the output-schema validators, so every callTool below is checked against them.
  const tools = await client.listTools();
  const close = async () => {
    await client.close();
    await server.close();
  };
  return { hd, runner, server, client, tools, close };
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
