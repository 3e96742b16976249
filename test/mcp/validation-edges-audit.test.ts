// Edge cases of readback validating a client's arguments by default: on SDK 1.x the schema the SDK is given is a
// stand-in that must accept every argument object the action's schema accepts and list exactly what the SDK
// derives from that schema; on SDK 2.x the listing is delegated, and pinned here for the same zod schemas.
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport as InMemoryV2, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AnyAction, callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';
import { listedOnV1 } from './listing.js';
import { closeAfterEach, completionOf, textOf } from './support.js';

const track = closeAfterEach();
type AssignInput = StandardSchemaV1<unknown, { id: string; assignee: string }>;

/** An assign_ticket tool with `schema` on a real SDK 1.x McpServer, reached by the SDK's own Client. */
async function served(schema: unknown, options: McpRegisterOptions = {}) {
  const { clock, tickets } = oneTicket();
  const events: TraceEvent[] = [];
  const runner = createRunner({ clock, trace: { sinks: [callbackSink((e) => void events.push(e))] } });
  const server = new McpServer({ name: 'edges', version: '1.0.0' });
  registerActions(server, runner, [assignTicket(tickets, schema as AssignInput)], {
    scope: { tenant: 'acme' },
    ...options,
  });
  const client = new Client({ name: 'c', version: '1.0.0' });
  // Not `link`: SDK 1.x cannot list a root `.meta({ id })` schema itself, and these calls need no listing.
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  track({ close: () => client.close().then(() => server.close()) });
  return { client, tickets, events };
}

const selected = (events: TraceEvent[]) => events.filter((e) => e.type === 'tool.selected');

const listed = (schema: unknown, via: 'sdk' | 'readback') => listedOnV1(schema, via, track);

/** The same on SDK 2.x (`@modelcontextprotocol/server` with the 2.x client). */
async function listedV2(schema: unknown, via: 'sdk' | 'readback') {
  const server = new McpServerV2({ name: 'list', version: '1.0.0' });
  if (via === 'sdk') {
    server.registerTool('t', { inputSchema: schema as z.ZodObject }, async () => ({ content: [] }));
  } else {
    const action = { ...assignTicket(oneTicket().tickets, schema as AssignInput), name: 't' } as AnyAction;
    registerActions(server, createRunner(), [action]);
  }
  const client = new ClientV2({ name: 'c', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  track({ close: () => client.close().then(() => server.close()) });
  return (await client.listTools()).tools[0]?.inputSchema;
}

const base = { id: z.string().describe('ticket id'), assignee: z.string().meta({ title: 'Who' }) };
const schemas = [
  z.object(base).partial(),
  z.object({
    id: z.string().default('T-1'),
    assignee: z.string().default('ana'),
    note: z.string().optional(),
  }),
  z.object({ ...base, due: z.string().nullish(), n: z.number().default(1) }),
  z.object({
    ...base,
    tags: z.array(z.object({ k: z.enum(['a', 'b']) })),
    labels: z.record(z.string(), z.number()),
  }),
  z.strictObject({ id: z.string().optional(), assignee: z.string().optional() }),
  z.looseObject(base).describe('an assignment'),
  z.object({ ...base, assignee: z.string().pipe(z.transform((s) => s.trim())) }),
  z.object({ id: z.coerce.string(), assignee: z.string() }),
  z.discriminatedUnion('k', [z.object({ k: z.literal('a'), ...base }), z.object({ k: z.literal('b') })]),
];

describe('readback/mcp input validation, edge cases (audit)', () => {
  it('SDK 1.x: an optional or defaulted field left out, or no arguments at all, reaches readback and runs', async () => {
    const optional = z.object({ id: z.string(), assignee: z.string(), note: z.string().optional() });
    const left = await served(optional);
    const result = await left.client.callTool({
      name: 'assign_ticket',
      arguments: { id: 'T-1', assignee: 'ana' },
    });
    expect(completionOf(result).status).toBe('verified');
    expect((await left.tickets.get('T-1'))?.assignee).toBe('ana');

    const defaulted = z.object({ id: z.string().default('T-1'), assignee: z.string().default('bo') });
    const none = await served(defaulted);
    const bare = await none.client.callTool({ name: 'assign_ticket' });
    expect(bare.isError).toBe(false);
    expect(completionOf(bare).status).toBe('verified');
    expect(selected(none.events)).toEqual([expect.objectContaining({ valid: true })]);
    expect((await none.tickets.get('T-1'))?.assignee).toBe('bo');
  });

  it('SDK 1.x: a root .meta({ id }) schema (listed behind a $ref) still hands readback every argument', async () => {
    const schema = z.object({ id: z.string(), assignee: z.string() }).meta({ id: 'EdgesAssignInput' });
    const { client, tickets } = await served(schema);
    const result = await client.callTool({
      name: 'assign_ticket',
      arguments: { id: 'T-1', assignee: 'ana' },
    });
    expect(textOf(result)).toMatch(/^\[status: verified\]/);
    expect((await tickets.get('T-1'))?.assignee).toBe('ana');
  });

  it('SDK 1.x: tools/list shows what the SDK derives, also when no field is required', async () => {
    for (const schema of schemas) {
      const own = await listed(schema, 'sdk');
      expect(own).toBeDefined();
      expect(await listed(schema, 'readback')).toStrictEqual(own);
    }
  });

  it('SDK 2.x: tools/list shows what the SDK derives for the same zod schemas', async () => {
    for (const schema of schemas) {
      expect(await listedV2(schema, 'readback')).toStrictEqual(await listedV2(schema, 'sdk'));
    }
  });
});
