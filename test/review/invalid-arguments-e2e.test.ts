import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { generateText, stepCountIs } from 'ai';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiTool } from '../../src/ai-sdk/index.js';
import { createRunner } from '../../src/index.js';
import { registerActions } from '../../src/mcp/index.js';
import { jsonlSink } from '../../src/trace/index.js';
import { scriptedModel } from '../ai-sdk/support.js';
import { runCli } from '../cli/support.js';
import { closeAfterEach, link } from '../mcp/support.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';

// The whole path of a call with wrong arguments, through the frameworks' own clients: the framework hands it to
// readback (which validates), the run record keeps it, and `readback review`, from the JSONL trace alone, finds the
// answer that claimed the work done anyway. readback's own status was honest (failed, invalid_input), so the first
// unsupported transition is the answer's text; the evidence names the refused arguments.
const dir = mkdtempSync(join(tmpdir(), 'readback-invalid-args-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const track = closeAfterEach();
const schema = () => z.object({ id: z.string(), assignee: z.string().min(1) });
const CLAIM = 'T-1 is now assigned.';

/** Reviews the trace with the answer that claimed the assignment: the answer is the first unsupported transition. */
async function expectAnswerFound(trace: string) {
  const r = await runCli(['review', trace, '--json', '--request', 'Assign T-1 to Ana', '--answer', CLAIM]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(3);
  const json = JSON.parse(r.stdout);
  expect(json.first).toMatchObject({
    where: 'final_answer',
    class: 'wrong_text',
    action: 'assign_ticket',
    evidence: { status: 'failed', kind: 'invalid_args', code: 'invalid_input', source: 'readback' },
  });
  expect(json.first.evidence.summary).toMatch(/^readback refused the arguments, nothing ran .*assignee/);
}

describe('refused arguments end to end: framework → readback → trace → review', () => {
  it('Vercel AI SDK (generateText): the invalid call is in the trace, and the answer claiming it done is found', async () => {
    const trace = join(dir, 'ai-sdk.jsonl');
    const sink = jsonlSink(trace);
    const { clock, tickets } = oneTicket();
    const runner = createRunner({ clock, trace: { sinks: [sink] } });
    await generateText({
      model: scriptedModel('assign_ticket', { id: 'T-1', assignee: '' }, CLAIM),
      tools: {
        assign_ticket: aiTool(runner, assignTicket(tickets, schema()), { scope: { tenant: 'acme' } }),
      },
      stopWhen: stepCountIs(3),
      prompt: 'Assign T-1 to Ana.',
    });
    await sink.close();

    expect(tickets.writes).toEqual([]);
    await expectAnswerFound(trace);
  });

  it('MCP (SDK client over memory): the invalid call is in the trace, and the answer claiming it done is found', async () => {
    const trace = join(dir, 'mcp.jsonl');
    const sink = jsonlSink(trace);
    const { clock, tickets } = oneTicket();
    const runner = createRunner({ clock, trace: { sinks: [sink] } });
    const server = new McpServer({ name: 'desk', version: '1.0.0' });
    registerActions(server, runner, [assignTicket(tickets, schema(), () => 'acme')]);
    const { client } = track(await link(server, new Client({ name: 'c', version: '1.0.0' })));
    const result = await client.callTool({ name: 'assign_ticket', arguments: { id: 'T-1', assignee: '' } });
    await sink.close();

    expect(result.isError).toBe(true);
    expect(tickets.writes).toEqual([]);
    await expectAnswerFound(trace);
  });
});
