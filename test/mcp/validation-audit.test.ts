// Who validates a client's arguments on SDK 1.x: by default readback (an invalid call reaches the runner, is recorded
// and answered with invalid_input, while tools/list shows the same JSON Schema as the SDK derives), or, with
// `inputValidation: 'sdk'`, the SDK itself (as before).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as z3 from 'zod/v3';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { completionText } from '../../src/integrations/text.js';
import { type McpRegisterOptions, registerActions } from '../../src/mcp/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';
import { listedOnV1 } from './listing.js';
import { closeAfterEach, completionOf, link, textOf } from './support.js';

const track = closeAfterEach();
const scope = { tenant: 'acme' };
type AssignInput = StandardSchemaV1<unknown, { id: string; assignee: string }>;

/** An assign_ticket tool on a real McpServer whose zod refinement counts how often the input is validated. */
async function served(
  options: McpRegisterOptions = {},
  setup: { shadow?: boolean; schema?: AssignInput } = {},
) {
  const { clock, tickets } = oneTicket();
  const events: TraceEvent[] = [];
  const runner = createRunner({
    clock,
    trace: { sinks: [callbackSink((e) => void events.push(e))] },
    ...(setup.shadow ? { shadow: true } : {}),
  });
  const calls = { validate: 0 };
  const counted = z.object({ id: z.string(), assignee: z.string().min(1) }).refine(() => {
    calls.validate += 1;
    return true;
  });
  const server = new McpServer({ name: 'audit', version: '1.0.0' });
  registerActions(server, runner, [assignTicket(tickets, setup.schema ?? counted)], { scope, ...options });
  const session = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
  return { ...session, tickets, events, calls };
}

const selected = (events: TraceEvent[]) => events.filter((e) => e.type === 'tool.selected');
const invalid = { name: 'assign_ticket', arguments: { id: 'T-1', assignee: '' } };

const listed = (schema: unknown, via: 'sdk' | 'readback') => listedOnV1(schema, via, track);

interface Node {
  label: string;
  children: Node[];
}
const node: z.ZodType<Node> = z.object({
  label: z.string(),
  get children() {
    return z.array(node);
  },
});

describe('readback/mcp input validation on SDK 1.x (audit)', () => {
  it('invalid arguments reach readback: recorded valid:false with the issues, invalid_input text as an error result, nothing runs', async () => {
    const { client, tickets, events } = await served();
    const result = await client.callTool(invalid);
    expect(result.isError).toBe(true);
    const c = completionOf(result);
    expect(c).toMatchObject({
      status: 'failed',
      errorCode: 'invalid_input',
      reason: expect.stringMatching(/^assignee: /),
    });
    expect(textOf(result)).toBe(completionText(c));
    expect(textOf(result)).toContain('assignee: ');
    expect(selected(events)).toEqual([
      expect.objectContaining({
        tool: 'assign_ticket',
        valid: false,
        issues: [expect.stringMatching(/^assignee: /)],
      }),
    ]);
    expect(tickets.writes).toEqual([]);
    expect(await tickets.get('T-1')).toMatchObject({ id: 'T-1', assignee: null });
  });

  it('a valid call is validated once, by readback, and verified', async () => {
    const { client, tickets, calls } = await served();
    const result = await client.callTool({
      name: 'assign_ticket',
      arguments: { id: 'T-1', assignee: 'ana' },
    });
    expect(completionOf(result).status).toBe('verified');
    expect((await tickets.get('T-1'))?.assignee).toBe('ana');
    expect(calls.validate).toBe(1);
  });

  it('tools/list shows exactly the JSON Schema the SDK derives from the action schema itself', async () => {
    const schemas = [
      z.object({
        id: z.string().describe('ticket id'),
        assignee: z.string().min(1),
        note: z.string().optional(),
      }),
      z.object({ id: z.string(), assignee: z.string() }).refine(() => true),
      z.strictObject({ id: z.string(), assignee: z.enum(['ana', 'bo']) }),
      z.looseObject({ id: z.string(), assignee: z.string() }).describe('an assignment'),
      z.object({ id: z.string(), assignee: z.string() }).catchall(z.number()),
      z.object({ id: z.string(), assignee: z.string(), tree: node }),
      z.object({}),
      z.object({ id: z.string(), assignee: z.string() }).transform((a) => a),
      z.union([z.object({ id: z.string(), assignee: z.string() }), z.object({ id: z.number() })]),
    ];
    for (const schema of schemas) {
      const own = await listed(schema, 'sdk');
      expect(own).toBeDefined();
      expect(await listed(schema, 'readback')).toStrictEqual(own);
    }
  });

  it('unknown arguments reach readback as sent: a strict schema refuses them as invalid_input', async () => {
    const schema = z.strictObject({ id: z.string(), assignee: z.string() });
    const { client, tickets, events } = await served({}, { schema });
    const result = await client.callTool({
      name: 'assign_ticket',
      arguments: { id: 'T-1', assignee: 'ana', x: 1 },
    });
    expect(completionOf(result)).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(selected(events)).toEqual([expect.objectContaining({ valid: false })]);
    expect(tickets.writes).toEqual([]);
  });

  it("inputValidation: 'sdk' keeps the SDK's rejection: its own error text, no completion, no record, nothing runs", async () => {
    const { client, tickets, events, calls } = await served({ inputValidation: 'sdk' });
    const result = await client.callTool(invalid);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toMatch(
      /Input validation error: Invalid arguments for tool assign_ticket: .* at assignee/,
    );
    expect(events).toEqual([]);
    expect(tickets.writes).toEqual([]);
    calls.validate = 0;
    await client.callTool({ name: 'assign_ticket', arguments: { id: 'T-1', assignee: 'ana' } });
    // The SDK's parse only: readback takes its output as validated (see prevalidated-audit.test.ts).
    expect(calls.validate).toBe(1);
  });

  it('a zod 3 schema is still validated by the SDK (readback cannot list it as the SDK does)', async () => {
    const schema = z3.object({ id: z3.string(), assignee: z3.string().min(1) });
    const { client, events, tools } = await served({}, { schema });
    expect(tools.tools[0]?.inputSchema).toStrictEqual(await listed(schema, 'sdk'));
    const result = await client.callTool(invalid);
    expect(textOf(result)).toMatch(/Input validation error: .* at assignee/);
    expect(events).toEqual([]);
  });

  it('a shadow tool: an invalid call is recorded and the client is told nothing ran', async () => {
    const { client, tickets, events } = await served({}, { shadow: true });
    const result = await client.callTool(invalid);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^\[not executed: invalid_input\] assignee: /);
    expect(selected(events)).toEqual([
      expect.objectContaining({ valid: false, issues: [expect.stringMatching(/^assignee: /)] }),
    ]);
    expect(tickets.writes).toEqual([]);
  });

  it('refuses an unknown inputValidation value before registering anything', () => {
    const server = new McpServer({ name: 'x', version: '1.0.0' });
    const action = assignTicket(oneTicket().tickets, z.object({ id: z.string(), assignee: z.string() }));
    const attempt = () =>
      registerActions(server, createRunner(), [action], { inputValidation: 'zod' as never });
    expect(attempt).toThrow(expect.objectContaining({ code: 'invalid_options', field: 'inputValidation' }));
  });
});
