import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Completion } from '../../src/index.js';
import { completionText } from '../../src/mcp/index.js';
import { prepareExampleServer, repo } from './example.js';

// The MCP Inspector's own CLI (`mcp-inspector --cli`), unmodified, drives examples/mcp-server.mjs over
// stdio. Its exit code is what a CI job would branch on: 5 when the tool result has isError.
const inspectorDir = join(repo, 'node_modules', '@modelcontextprotocol', 'inspector');
const inspectorPkg = JSON.parse(readFileSync(join(inspectorDir, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
const inspectorBin = join(inspectorDir, inspectorPkg.bin['mcp-inspector'] as string);

let home: string;
let exampleServer: string;
let cleanup: (() => Promise<void>) | undefined;
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'readback-inspector-home-'));
  const example = await prepareExampleServer();
  exampleServer = example.path;
  cleanup = example.cleanup;
}, 60_000);
afterAll(async () => {
  if (home) rmSync(home, { recursive: true, force: true });
  await cleanup?.();
});

interface InspectorRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `mcp-inspector --cli --method tools/call` against the example server started with `serverFlags`. */
function callTool(serverFlags: string[], tool: string, args: Record<string, string>): Promise<InspectorRun> {
  const argv = [
    inspectorBin,
    '--cli',
    '--format',
    'json',
    process.execPath,
    exampleServer,
    ...serverFlags,
    '--method',
    'tools/call',
    '--tool-name',
    tool,
    '--tool-arg',
    ...Object.entries(args).map(([k, v]) => `${k}=${v}`),
  ];
  // HOME and the XDG folders point at a temp dir, so the inspector's catalog and secrets stay out of the user's.
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
  };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: home, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The tool result the inspector printed (`--format json` wraps it as `{ result }`). */
function printed(run: InspectorRun) {
  const { result } = JSON.parse(run.stdout) as {
    result: { content: { type: string; text: string }[]; structuredContent: Completion; isError: boolean };
  };
  expect(result.content).toHaveLength(1);
  // The text the model would read repeats the status readback settled on.
  expect(result.content[0]?.text).toBe(completionText(result.structuredContent));
  return result;
}

describe(`MCP Inspector CLI ${inspectorPkg.version} against examples/mcp-server.mjs`, () => {
  it('verified: exit 0, and the printed status is verified', async () => {
    const run = await callTool([], 'update_ticket', { id: 'T-104', status: 'resolved' });
    expect(run.code, run.stderr).toBe(0);
    const result = printed(run);
    expect(result.isError).toBe(false);
    expect(result.structuredContent.status).toBe('verified');
    // What readback read back from the ticket system, not what the write call answered.
    expect(result.structuredContent.evidence).toMatchObject({ status: 'resolved' });
    expect(result.content[0]?.text.startsWith('[status: verified]')).toBe(true);
    expect(run.stderr).toContain('update_ticket {"id":"T-104","status":"resolved"} → verified');
  });

  it('failed (the write answered ok but changed nothing): exit 5, status failed', async () => {
    const run = await callTool(['--fail-next-write'], 'update_ticket', { id: 'T-104', status: 'resolved' });
    expect(run.code, run.stderr).toBe(5);
    const result = printed(run);
    expect(result.isError).toBe(true);
    expect(result.structuredContent.status).toBe('failed');
    expect(result.structuredContent.errorCode).toBe('readback_mismatch');
    expect(result.structuredContent.evidence).toMatchObject({ status: 'open' });
    expect(result.content[0]?.text).toMatch(/^\[status: failed, errorCode: readback_mismatch/);
    expect(run.stderr).toContain('"code":"tool_is_error"');
  });

  it('unknown (the email never left the queue within the poll budget): exit 5, status unknown', async () => {
    const run = await callTool(['--stuck-next-email'], 'send_email', {
      to: 'ana@example.com',
      subject: 'Your proposal',
      body: 'Attached.',
    });
    expect(run.code, run.stderr).toBe(5);
    const result = printed(run);
    expect(result.isError).toBe(true);
    expect(result.structuredContent.status).toBe('unknown');
    expect(result.structuredContent.errorCode).toBe('poll_budget_exhausted');
    expect(result.content[0]?.text).toMatch(/^\[status: unknown, errorCode: poll_budget_exhausted/);
  });

  it('no_op: exit 0 as well, so exit 0 alone is not proof of verified; the status is', async () => {
    const run = await callTool([], 'update_ticket', { id: 'T-105', status: 'resolved' });
    expect(run.code, run.stderr).toBe(0);
    const result = printed(run);
    expect(result.isError).toBe(false);
    expect(result.structuredContent.status).toBe('no_op');
  });
});
