import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionText } from '../../src/mcp/index.js';
import { completionOf, textOf } from './support.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const serverPath = join(repo, 'examples', 'mcp-server.mjs');
// The entry points the example imports (by the package's own name, through its exports map).
const built = ['index.js', 'mcp/index.js', 'testing/index.js'].map((f) => join(repo, 'dist', f));

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** The example runs from dist, like a user's server would; build only when dist is missing or older than src. */
function ensureBuilt(): void {
  const stale =
    built.some((f) => !existsSync(f)) ||
    Math.min(...built.map((f) => statSync(f).mtimeMs)) < newestSource(join(repo, 'src'));
  if (stale) execSync('npm run build --silent', { cwd: repo, stdio: 'inherit' });
}

let client: Client;
let transport: StdioClientTransport;
let serverLog = '';
const protocolErrors: Error[] = [];

beforeAll(async () => {
  ensureBuilt();
  transport = new StdioClientTransport({ command: process.execPath, args: [serverPath], stderr: 'pipe' });
  transport.stderr?.on('data', (chunk: Buffer) => {
    serverLog += chunk.toString();
  });
  client = new Client({ name: 'stdio-test', version: '1.0.0' });
  client.onerror = (error) => protocolErrors.push(error);
  await client.connect(transport);
}, 120_000);

afterAll(async () => {
  // Only reached when a test failed before the close test ran; close is idempotent.
  await client?.close();
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
