import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineAction } from '../../src/index.js';
import { completionSchema, registerActions } from '../../src/mcp/index.js';
import { closeAfterEach, connect, link } from './support.js';

const track = closeAfterEach();

function slowWrite(onAbort: () => void, landed: () => boolean) {
  return defineAction({
    name: 'slow_write',
    description: 'A write that waits for its signal.',
    input: z.object({ id: z.string() }),
    target: (i) => `thing:${i.id}`,
    postcondition: 'The thing is written.',
    execute: (_i, ctx) =>
      new Promise((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          onAbort();
          reject(ctx.signal.reason);
        });
      }),
    observe: async () => (landed() ? { written: true } : null),
    expect: () => ({ written: true }),
    maxInFlightMs: 0,
  });
}

describe('readback/mcp at run time (audit)', () => {
  it('a client that cancels a call mid-execute aborts the run; the record is never verified', async () => {
    let aborted = false;
    const runner = createRunner();
    const server = new McpServer({ name: 's', version: '1.0.0' });
    const onAbort = () => {
      aborted = true;
    };
    registerActions(server, runner, [slowWrite(onAbort, () => false)]);
    const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
    const controller = new AbortController();
    const call = client.callTool({ name: 'slow_write', arguments: { id: 'a' } }, undefined, {
      signal: controller.signal,
    });
    await new Promise((r) => setTimeout(r, 20));
    controller.abort(new Error('user pressed stop'));
    await expect(call).rejects.toThrow();
    for (let i = 0; i < 50 && !(await runner.store.list())[0]?.completion; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(aborted).toBe(true);
    const [record] = await runner.store.list();
    expect(record?.completion?.status).toBeDefined();
    expect(record?.completion?.status).not.toBe('verified');
    // The server still serves.
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(['slow_write']);
  });

  it("shadow mode: a live tool that answers with a bigint id is the client's normal result, not an error", async () => {
    const runner = createRunner({ shadow: true });
    const insert = defineAction({
      name: 'insert_row',
      description: 'Inserts a row.',
      input: z.object({ n: z.number() }),
      target: (i) => `row:${i.n}`,
      postcondition: 'The row exists.',
      execute: async () => ({ ok: true, id: 9007199254740993n }),
      observe: async () => ({ exists: true }),
      expect: () => ({ exists: true }),
    });
    const server = new McpServer({ name: 's', version: '1.0.0' });
    registerActions(server, runner, [insert]);
    const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
    const result = await client.callTool({ name: 'insert_row', arguments: { n: 1 } });
    expect(result.isError).toBe(false);
    expect((result.content as { text: string }[])[0]?.text).toBe('{"ok":true,"id":"9007199254740993"}');
  });

  it('error results (failed, unknown) carry structuredContent valid against the advertised outputSchema', async () => {
    const { client, hd } = track(await connect());
    hd.tickets.faults.softFailNextWrite = true;
    const failed = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    hd.mail.faults.nextOutcome = 'stuck';
    const unknown = await client.callTool({
      name: 'send_email',
      arguments: { to: 'ana@example.com', subject: 's', body: 'b' },
    });
    for (const [result, status] of [
      [failed, 'failed'],
      [unknown, 'unknown'],
    ] as const) {
      expect(result.isError).toBe(true);
      const parsed = completionSchema.safeParse(result.structuredContent);
      expect(parsed.success).toBe(true);
      expect(parsed.data?.status).toBe(status);
    }
  });
});
