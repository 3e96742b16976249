import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionText } from '../../src/mcp/index.js';
import { prepareExampleServer } from './example.js';
import { completionOf, textOf } from './support.js';

let client: Client;
let cleanup: (() => Promise<void>) | undefined;
let transport: StdioClientTransport;
let serverLog = '';
const protocolErrors: Error[] = [];

beforeAll(async () => {
  const example = await prepareExampleServer();
  cleanup = example.cleanup;
  transport = new StdioClientTransport({ command: process.execPath, args: [example.path], stderr: 'pipe' });
  transport.stderr?.on('data', (chunk: Buffer) => {
    serverLog += chunk.toString();
  });
  client = new Client({ name: 'stdio-test', version: '1.0.0' });
  client.onerror = (error) => protocolErrors.push(error);
  await client.connect(transport);
}, 120_000);

afterAll(async () => {
  // The close test has normally closed the client already; close is idempotent.
  await client?.close();
  await cleanup?.();
});

describe('examples/mcp-server.mjs over stdio, as a child process, with the SDK Client', () => {
  it('lists the two helpdesk tools with output schemas and truthful annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['send_email', 'update_ticket']);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect(tool.annotations?.readOnlyHint).toBe(false);
    }
    expect(tools.find((t) => t.name === 'update_ticket')?.annotations?.idempotentHint).toBe(false);
    expect(tools.find((t) => t.name === 'send_email')?.annotations?.idempotentHint).toBe(true);
  });

  it('update_ticket: verified, not an error, and the text says so', async () => {
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-104', status: 'resolved' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(false);
    expect(c.status).toBe('verified');
    expect(c.target).toBe('ticket:T-104');
    const text = textOf(result);
    expect(text.startsWith('[status: verified')).toBe(true);
    expect(text).toBe(completionText(c));
  });

  it('update_ticket on a ticket already resolved: no_op, not an error', async () => {
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-105', status: 'resolved' },
    });
    expect(result.isError).toBe(false);
    expect(completionOf(result).status).toBe('no_op');
    expect(textOf(result).startsWith('[status: no_op')).toBe(true);
  });

  it('invalid input: an error result (failed, invalid_input), and the server keeps serving', async () => {
    const result = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-106', status: 'done' },
    });
    const c = completionOf(result);
    expect(result.isError).toBe(true);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(textOf(result)).toMatch(/^\[status: failed, errorCode: invalid_input/);
    const again = await client.callTool({
      name: 'update_ticket',
      arguments: { id: 'T-106', status: 'closed' },
    });
    expect(completionOf(again).status).toBe('verified');
  });

  it('stdout carried only the protocol; the server logged to stderr', () => {
    expect(protocolErrors).toEqual([]);
    expect(serverLog).toContain('[readback-helpdesk] serving update_ticket and send_email over stdio');
    expect(serverLog).toContain('update_ticket {"id":"T-104","status":"resolved"} → verified');
  });

  it('closes cleanly: the server exits when its stdin ends, leaving no process behind', async () => {
    const pid = transport.pid;
    expect(pid).toBeGreaterThan(0);
    const started = Date.now();
    await client.close();
    // The SDK sends SIGTERM only after waiting 2 s; exiting sooner means the server ended on its own.
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(() => process.kill(pid as number, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });
});
