import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { z } from 'zod';
import { type AnyAction, createRunner } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';
import { type closeAfterEach, link } from './support.js';

type AssignInput = StandardSchemaV1<unknown, { id: string; assignee: string }>;

/**
 * The input schema SDK 1.x's `tools/list` shows for `schema`: handed to the SDK as is (`sdk`), or through
 * readback's `registerActions` (`readback`), so a test can hold the two equal.
 */
export async function listedOnV1(
  schema: unknown,
  via: 'sdk' | 'readback',
  track: ReturnType<typeof closeAfterEach>,
): Promise<unknown> {
  const server = new McpServer({ name: 'list', version: '1.0.0' });
  if (via === 'sdk') {
    server.registerTool('t', { inputSchema: schema as z.ZodObject }, async () => ({ content: [] }));
  } else {
    const action = { ...assignTicket(oneTicket().tickets, schema as AssignInput), name: 't' } as AnyAction;
    registerActions(server, createRunner(), [action]);
  }
  const { tools } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
  return tools.tools[0]?.inputSchema;
}
