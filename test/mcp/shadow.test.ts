import { describe, expect, it } from 'vitest';
import { accepted, rejected } from '../../src/index.js';
import { liveToolResult } from '../../src/mcp/index.js';
import { closeAfterEach, connect } from './support.js';

const track = closeAfterEach();

/** A helpdesk whose runner is in shadow mode, served by a real McpServer to the SDK's own Client. */
async function shadowSession() {
  return track(await connect({ scope: { tenant: 'acme' }, tasks: true }, { shadow: true }));
}

describe('readback/mcp in shadow mode', () => {
  it("gives the client the live tool's own result while the record keeps the verdict", async () => {
    const { hd, runner, client, tools } = await shadowSession();
    // No completion schema is promised for a shadow tool: the live tool's result goes out as before.
    const ticket = tools.tools.find((t) => t.name === 'update_ticket');
    expect(ticket?.outputSchema).toBeUndefined();

    hd.tickets.faults.softFailNextWrite = true;
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toBeUndefined();
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    // The tool claimed success (its own words, untouched)...
    expect(JSON.parse(text)).toMatchObject({ ok: true });
    // ...the ticket did not change, and the record says the claim disagreed with what was read back.
    expect((await hd.tickets.get('T-104'))?.status).not.toBe('resolved');
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.status).toBe('failed');
    expect(record?.completion?.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
  });

  it("an accepted-mode shadow tool answers at once with the provider's response, never as a task", async () => {
    const { hd, runner, client } = await shadowSession();
    const result = await client.callTool({
      name: 'send_email',
      arguments: { to: 'ana@example.com', subject: 'Hi', body: 'x' },
    });
    expect(result.isError).toBe(false);
    const text = (result.content as { text: string }[])[0]?.text ?? '';
    expect(JSON.parse(text)).toMatchObject({ status: 'queued' });
    expect(hd.mail.messages).toHaveLength(1);
    const [record] = await runner.store.list({ action: 'send_email' });
    expect(record?.status).toBe('pending');
    expect(record?.completion?.shadow?.claimed).toBe('accepted');
  });

  it("a live tool's thrown error reaches the client as the tool error it always was", async () => {
    const { hd, runner, client } = await shadowSession();
    hd.tickets.faults.landNextWriteAfterMs = 0;
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'closed' },
    });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]?.text).toMatch(/ETIMEDOUT|timed out/i);
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.shadow?.claimed).toBe('error');
  });

  it('passes a CallToolResult through unchanged and wraps anything else as text', () => {
    const own = { content: [{ type: 'text', text: 'sent' }], isError: false, _meta: { x: 1 } };
    expect(liveToolResult(own)).toBe(own);
    expect(liveToolResult('ok')).toEqual({ content: [{ type: 'text', text: 'ok' }], isError: false });
    expect(liveToolResult({ id: 7 })).toEqual({
      content: [{ type: 'text', text: '{"id":7}' }],
      isError: false,
    });
    // readback's markers are unwrapped to what the provider said; a refusal is a tool error.
    expect(liveToolResult(accepted('m-1', { queued: true })).content[0]?.text).toBe('{"queued":true}');
    expect(liveToolResult(accepted('m-1')).content[0]?.text).toBe('m-1');
    expect(liveToolResult(rejected('conflict', 'stale version'))).toEqual({
      content: [{ type: 'text', text: '{"code":"conflict","reason":"stale version"}' }],
      isError: true,
    });
  });
});
